package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/shard"
)

// check of a sharding rules file proves the rules themselves before it
// looks at a server (shard.Config.Check): every target each strategy's
// algorithm can pick is one of the table's data nodes, binding tables are
// laid out alike. A rule that fails the proof fails at run time for some
// keys whatever the servers hold; sql.Open refuses it. check lists every
// such problem, not only the first, and goes on to the servers when the
// file names its data sources.

// rulesCheck is what check learned about a rules file.
type rulesCheck struct {
	file     string
	rules    *shard.Rules // nil when the file does not build
	problems []error      // each a *rwshard.ConfigError, or an error reading the file
	unproven []string
}

// proveRules loads and checks the rules of a sharded cfg. It returns the
// rules to check the servers with, nil when the file does not build.
func proveRules(cfg *rwshard.Config) *rulesCheck {
	rc := &rulesCheck{file: cfg.Sharding.RulesFile}
	if r, ok := cfg.Sharding.Rules.(*shard.Rules); ok && r != nil {
		rc.rules = r // built in code: nothing to prove from here
		return rc
	}
	sc, err := shard.LoadRules(cfg.Sharding.RulesFile)
	if err != nil {
		rc.problems = []error{err}
		return rc
	}
	rules, chk, err := sc.Check(nil)
	if err != nil {
		rc.problems = []error{err}
		return rc
	}
	rc.rules = rules
	for _, p := range chk.Problems {
		rc.problems = append(rc.problems, p)
	}
	rc.unproven = chk.Unproven
	return rc
}

// ruleText is a problem of the rules for the report, without the
// program's prefixes (the file, line and key stay).
func ruleText(err error) string {
	s := err.Error()
	for _, p := range []string{"rwshard: config: ", "rwshard: config ", "rwshard: shard: ", "rwshard: "} {
		if strings.HasPrefix(s, p) {
			return s[len(p):]
		}
	}
	return s
}

// summary describes the rules in one line.
func (rc *rulesCheck) summary() string {
	if rc.rules == nil {
		return "rules " + rc.file + ": not loaded"
	}
	r := rc.rules
	s := fmt.Sprintf("rules %s: %s, %s", rc.file, plural(len(r.Tables), "sharded table"), plural(len(r.DataSources), "data source"))
	if n := len(r.BindingGroups); n > 0 {
		s += ", " + plural(n, "binding group")
	}
	if n := len(r.Broadcast); n > 0 {
		s += ", " + plural(n, "broadcast table")
	}
	return s
}

// print writes the rules' part of the text report.
func (rc *rulesCheck) print(w io.Writer) {
	fmt.Fprintln(w, rc.summary())
	if len(rc.problems) > 0 {
		fmt.Fprintf(w, "\nproblems:\n")
		for _, p := range rc.problems {
			fmt.Fprintf(w, "  - %s\n", ruleText(p))
		}
	}
	if len(rc.unproven) > 0 {
		fmt.Fprintf(w, "\nnot proved (custom algorithms, targets that cannot be listed):\n")
		for _, u := range rc.unproven {
			fmt.Fprintf(w, "  - %s\n", u)
		}
	}
	fmt.Fprintln(w)
	switch {
	case len(rc.problems) > 0:
		fmt.Fprintf(w, "%s found in the rules: sql.Open refuses them\n\n", plural(len(rc.problems), "problem"))
	case len(rc.unproven) > 0:
		fmt.Fprintf(w, "ok: every target the rules can pick is a data node, but for %s not proved\n\n", plural(len(rc.unproven), "strategy"))
	default:
		fmt.Fprintf(w, "ok: every target the rules can pick is a data node\n\n")
	}
}

// rulesJSON is the rules' part of check -json.
type rulesJSON struct {
	File        string `json:"file"`
	Loaded      bool   `json:"loaded"` // false: the file does not build; Problems says why
	Tables      int    `json:"tables"`
	DataSources int    `json:"data_sources"`
	// Problems: rules that fail at run time (or that sql.Open refuses
	// for another reason); counted in the document's problems.
	Problems  []ruleProblemJSON `json:"problems"`
	NotProved []string          `json:"not_proved"`
}

// ruleProblemJSON is one problem of the rules. The fields after Message
// are set when the problem says them.
type ruleProblemJSON struct {
	Message string `json:"message"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Key     string `json:"key,omitempty"`
	// A target an algorithm picks and the table does not have: the
	// table, the strategy (database or table), the algorithm's name, the
	// data sources short of tables, the targets missing (the first few).
	Table       string   `json:"table,omitempty"`
	Strategy    string   `json:"strategy,omitempty"`
	Algorithm   string   `json:"algorithm,omitempty"`
	DataSources []string `json:"data_sources,omitempty"`
	Missing     []string `json:"missing,omitempty"`
}

func (rc *rulesCheck) json() *rulesJSON {
	j := &rulesJSON{File: rc.file, Loaded: rc.rules != nil, Problems: []ruleProblemJSON{}, NotProved: []string{}}
	if rc.rules != nil {
		j.Tables, j.DataSources = len(rc.rules.Tables), len(rc.rules.DataSources)
	}
	j.NotProved = append(j.NotProved, rc.unproven...)
	for _, err := range rc.problems {
		p := ruleProblemJSON{Message: ruleText(err)}
		var ce *rwshard.ConfigError
		if errors.As(err, &ce) {
			p.File, p.Line, p.Key = ce.File, ce.Line, ce.Key
		}
		var re *shard.RuleError
		if errors.As(err, &re) {
			p.Table, p.Strategy, p.Algorithm, p.DataSources, p.Missing = re.Table, re.Strategy, re.Algorithm, re.DataSources, re.Missing
		}
		j.Problems = append(j.Problems, p)
	}
	return j
}
