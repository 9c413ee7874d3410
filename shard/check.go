package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rwshard/rwshard"
)

// The proof of the rules, without a server: every target a strategy's
// algorithm can pick for a key of the right type is one of the table's
// data nodes. A rule that fails it works for some keys and fails at run
// time for the others (MOD with sharding-count 4 over t_order_${0..1}
// fails for half of them), so Build refuses it.

// RulesCheck is what Config.Check found beyond the checks that stop Build
// at once.
type RulesCheck struct {
	// Problems are rules that fail at run time for some keys, whatever
	// the servers hold; each is a *rwshard.ConfigError naming the key of the
	// strategy, wrapping a *RuleError. Build refuses the configuration
	// with the first one.
	Problems []*rwshard.ConfigError
	// Unproven says, one sentence each, which strategies could not be
	// proved: custom algorithms, INLINE expressions that name a target
	// per key value, a database and a table strategy on one column whose
	// algorithms cannot be enumerated together. They are not problems.
	Unproven []string
}

// RuleError is a strategy whose algorithm picks, for some keys, a target
// the table does not have (or several targets). It matches ErrNoTarget,
// the error those keys would meet at run time.
type RuleError struct {
	Table     string // logical table
	Strategy  string // "database" or "table"
	Algorithm string // the algorithm's name in the configuration
	// DataSources are, for the table strategy, the data sources short of
	// tables; empty for the database strategy.
	DataSources []string
	// Missing names the targets the algorithm picks and does not find
	// (the first few), as the algorithm would look them up:
	// "t_order_2", or "a name ending in 2" when the others' names do not
	// tell.
	Missing []string
	msg     string
}

func (e *RuleError) Error() string        { return "rwshard: shard: " + e.msg }
func (e *RuleError) Is(target error) bool { return target == ErrNoTarget }

// Check is Build that goes on past the rules' first run-time problem. It
// returns the first problem that stops Build at once (as Build does), or
// the rules with what the proof found: rules with Problems are not fit
// to route (Build refuses them), but name the data sources and data nodes
// for tools such as `rwshard check` that go on to look at the servers.
func (c *Config) Check(custom map[string]Algorithm) (*Rules, *RulesCheck, error) {
	b := &builder{c: c, custom: custom, algs: map[string]Algorithm{}}
	if err := b.build(); err != nil {
		return nil, nil, err
	}
	return b.r, b.prove(), nil
}

// prove runs the proof over every table, in name order.
func (b *builder) prove() *RulesCheck {
	chk := &RulesCheck{}
	for _, name := range sortedNames(b.r.Tables) {
		for _, f := range proveTable(b.r.Tables[name]) {
			if f.err == nil {
				chk.Unproven = append(chk.Unproven, f.unproven)
				continue
			}
			key := b.strategyKeys[name][0]
			if f.err.Strategy == "table" {
				key = b.strategyKeys[name][1]
			}
			chk.Problems = append(chk.Problems, b.c.wrapAt(key+".algorithm", f.err))
		}
	}
	return chk
}

// proved runs the proof over rules however they were made: Config.Build
// has proved its own, but rules assembled in code reach the connector
// without it, and a rule that fails it must not reach the router. It
// returns the first problem, at the key the YAML would have.
func (r *Rules) proved() error {
	for _, name := range sortedNames(r.Tables) {
		for _, f := range proveTable(r.Tables[name]) {
			if f.err != nil {
				return &rwshard.ConfigError{Key: "tables." + name + "." + f.err.Strategy + "Strategy.algorithm", Err: f.err}
			}
		}
	}
	return nil
}

// proofFinding is one outcome of the proof: a problem, or a strategy it could
// not prove.
type proofFinding struct {
	err      *RuleError
	unproven string
}

// proofLayout is a table's data nodes by data source.
type proofLayout struct {
	ds     []string            // in order of first appearance, as the router has them
	tables map[string][]string // per data source, in data node order
}

func proofLayoutOf(t *TableRule) proofLayout {
	l := proofLayout{tables: map[string][]string{}}
	for _, n := range t.DataNodes {
		if _, ok := l.tables[n.DataSource]; !ok {
			l.ds = append(l.ds, n.DataSource)
		}
		l.tables[n.DataSource] = append(l.tables[n.DataSource], n.Table)
	}
	return l
}

// groups returns the data sources in groups of those with the same
// tables, in order; the router asks a table strategy the same question
// in each of a group.
func (l proofLayout) groups() [][]string {
	var out [][]string
	for _, ds := range l.ds {
		i := slices.IndexFunc(out, func(g []string) bool { return slices.Equal(l.tables[g[0]], l.tables[ds]) })
		if i < 0 {
			out = append(out, []string{ds})
			continue
		}
		out[i] = append(out[i], ds)
	}
	return out
}

// proveTable proves t's strategies against its data nodes, as the router
// uses them: the database strategy picks among the data sources of t's
// data nodes; the table strategy picks among the tables of a data source
// — of every data source when it shards on a column of its own (a key of
// that column may meet any of them), of the one the database strategy
// picked when both shard on one column.
func proveTable(t *TableRule) []proofFinding {
	var out []proofFinding
	l := proofLayoutOf(t)
	db, tbl := t.DatabaseStrategy, t.TableStrategy
	if db != nil {
		bad, total, why := proveTargets(db.Algorithm, db.Column, l.ds)
		switch {
		case why != "":
			out = append(out, unprovenFinding(t, "database", db, why))
		case total > 0:
			out = append(out, proofFinding{err: proofMissingError(t, "database", db, nil, "", bad, total, l.ds)})
		}
	}
	if tbl == nil {
		return out
	}
	groups := l.groups()
	if db != nil && db.Column == tbl.Column && len(groups) > 1 {
		// A data source sees only the keys the database strategy sends
		// it: ds_0 may hold the even tables and ds_1 the odd ones.
		return append(out, proveJoint(t, l)...)
	}
	for _, g := range groups {
		bad, total, why := proveTargets(tbl.Algorithm, tbl.Column, l.tables[g[0]])
		switch {
		case why != "":
			return append(out, unprovenFinding(t, "table", tbl, why))
		case total > 0:
			out = append(out, proofFinding{err: proofMissingError(t, "table", tbl, g, "", bad, total, l.tables[g[0]])})
		}
	}
	return out
}

// proofGap is one target an algorithm looks for that is not there exactly
// once.
type proofGap struct {
	want  string   // the target, by name ("t_order_2", "a name ending in 2")
	when  string   // the keys that go there ("order_id mod 4 = 2")
	found []string // the targets that answer: none, or several
}

func (p proofGap) String() string {
	if len(p.found) > 1 {
		return "several for " + p.when + " (" + strings.Join(p.found, ", ") + ")"
	}
	return p.want + " (" + p.when + ")"
}

// proofMaxListed bounds the targets a problem lists.
const proofMaxListed = 8

// proofMissingError describes the picks of strategy s (level "database" or
// "table") of t that do not find one target among have; dss are the data
// sources of the table strategy, after the note on a joint proof.
func proofMissingError(t *TableRule, level string, s *Strategy, dss []string, after string, bad []proofGap, total int, have []string) *RuleError {
	e := &RuleError{Table: t.Logical, Strategy: level, Algorithm: s.AlgorithmName, DataSources: dss}
	var b strings.Builder
	fmt.Fprintf(&b, "table %s: %s strategy %s%s picks ", t.Logical, level, proofStrategyName(s), after)
	switch {
	case level == "database":
		b.WriteString("data sources the table has no data node in: ")
	case len(dss) == 1:
		fmt.Fprintf(&b, "tables data source %s does not have: ", dss[0])
	default:
		fmt.Fprintf(&b, "tables data sources %s do not have: ", strings.Join(dss, ", "))
	}
	for i, p := range bad {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
		if len(p.found) == 0 {
			e.Missing = append(e.Missing, p.want)
		}
	}
	if total > len(bad) {
		fmt.Fprintf(&b, " and %d more", total-len(bad))
	}
	switch {
	case level == "database":
		fmt.Fprintf(&b, "; its data nodes are in %s", describeTargets(have))
	case len(dss) == 1:
		fmt.Fprintf(&b, "; it has %s", describeTargets(have))
	default:
		fmt.Fprintf(&b, "; each has %s", describeTargets(have))
	}
	e.msg = b.String()
	return e
}

func unprovenFinding(t *TableRule, level string, s *Strategy, why string) proofFinding {
	return proofFinding{unproven: "table " + t.Logical + ": " + level + " strategy " + proofStrategyName(s) + " not proved: " + why}
}

// proofStrategyName names a strategy's algorithm, says what it is and
// its column: "t_mod = MOD(sharding-count=4) on order_id".
func proofStrategyName(s *Strategy) string {
	return proofAlgorithmName(s) + " on " + s.Column
}

// proofAlgorithmName names a strategy's algorithm and says what it is:
// "t_mod = MOD(sharding-count=4)".
func proofAlgorithmName(s *Strategy) string {
	name := s.AlgorithmName
	if st, ok := s.Algorithm.(fmt.Stringer); ok && isBuiltinAlgorithm(s.Algorithm) {
		if name == "" {
			name = st.String()
		} else {
			name += " = " + st.String()
		}
	}
	return name
}

func isBuiltinAlgorithm(a Algorithm) bool {
	switch a.(type) {
	case *modAlgorithm, *hashModAlgorithm, *javaHashModAlgorithm, *rangeAlgorithm, *intervalAlgorithm, *inlineAlgorithm:
		return true
	}
	return false
}

// guessTargetName is the name of the target an algorithm that picks by the
// end of the name looks for, spelled like the others: namePrefix of
// targets then suffix, zero-padded as the others are. Without a common
// prefix it says what the name must end with.
func guessTargetName(targets []string, suffix string) string {
	prefix := namePrefix(targets)
	if prefix == "" {
		return "a name ending in " + suffix
	}
	// t_order_00 … t_order_07: the missing one is t_order_08.
	width, padded := -1, false
	for _, t := range targets {
		digits := len(t) - len(strings.TrimRight(t, "0123456789"))
		if width >= 0 && digits != width {
			width = -1
			break
		}
		width = digits
		padded = padded || digits > 1 && t[len(t)-digits] == '0'
	}
	if padded && proofDigits(suffix) && len(suffix) < width {
		suffix = strings.Repeat("0", width-len(suffix)) + suffix
	}
	return prefix + suffix
}

func proofDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// proofItoa is strconv.FormatUint, for the numbers of numbered targets.
func proofItoa(n uint64) string { return strconv.FormatUint(n, 10) }
