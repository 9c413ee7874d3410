package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/redact"
)

func explainCommand() *command {
	return &command{
		name: "explain",
		args: "[flags] CONFIG SQL [ARG...]",
		summary: `Opens rwshard over CONFIG with health probes on, waits for the first
probe of every node, and prints where SQL would run now and why: the
statement's kind, the routing reason, the nodes that may run it, the hint
and consistency rule that applied. The statement is not run; its string
literals are shown as '?'. Hints in SQL comments apply (/* rwshard:primary
*/ SELECT …). There must be one ARG per ? placeholder (outside literals,
quoted identifiers and comments). ARGs that are integers are passed as
int64, others as strings; an ARG that starts with "-" and is not a number
goes after "--".

With -json, stdout is the plan as one JSON document: {"sql", "kind",
"effects", "statements", "reason", "targets", "hint", "consistency",
"tables", "pool", "pool_rule", "units": [{"data_source", "plan"}]}.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			timeout := fs.Duration("timeout", 10*time.Second, "bound on connecting, the first probes and the plan")
			conn := addConnFlags(fs, "print the plan as one JSON document")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) < 2 {
					return e.usageError("want CONFIG and SQL, got %s", plural(len(args), "argument"))
				}
				if n, got := countPlaceholders(args[1]), len(args)-2; n != got {
					return e.usageError("SQL has %s, got %s", plural(n, "placeholder"), plural(got, "argument"))
				}
				cfg, err := conn.config(args[0])
				if err != nil {
					e.errorf("explain: %s", errText(nil, err))
					return exitProblem
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				db, _, err := openCluster(ctx, cfg)
				if err != nil {
					e.errorf("explain: %s", errText(cfg, err))
					return exitProblem
				}
				defer db.Close()
				// The plan reflects the nodes' health as probed; a primary
				// that does not answer shows in it (writes still target it).
				if err := db.PingContext(ctx); err != nil {
					e.errorf("explain: warning: the primary does not answer: %s", errText(cfg, err))
				}
				plan, err := rwshard.Explain(ctx, db, args[1], explainArgs(args[2:])...)
				if err != nil {
					e.errorf("explain: %s", errText(cfg, err))
					return exitProblem
				}
				if *conn.json {
					return writeJSON(e, planOf(plan))
				}
				fmt.Fprintln(e.stdout, plan.String())
				return exitOK
			}
		},
	}
}

// planJSON is explain's plan with -json: rwshard.Plan with the string
// literals of its SQL texts redacted, as Plan.String shows them.
type planJSON struct {
	SQL         string     `json:"sql"`
	Kind        string     `json:"kind"`
	Effects     []string   `json:"effects"`
	Statements  int        `json:"statements"`
	Reason      string     `json:"reason"`
	Targets     []string   `json:"targets"`
	Hint        string     `json:"hint,omitempty"`
	Consistency string     `json:"consistency,omitempty"`
	Tables      []string   `json:"tables,omitempty"`
	Pool        string     `json:"pool,omitempty"`
	PoolRule    string     `json:"pool_rule,omitempty"`
	Units       []unitJSON `json:"units,omitempty"`
}

// unitJSON is one shard's part of a sharded statement.
type unitJSON struct {
	DataSource string   `json:"data_source"`
	Plan       planJSON `json:"plan"`
}

func planOf(p rwshard.Plan) planJSON {
	j := planJSON{SQL: redact.Literals(p.SQL), Kind: p.Kind, Effects: p.Effects, Statements: p.Statements,
		Reason: p.Reason, Targets: p.Targets, Hint: p.Hint, Consistency: p.Consistency, Tables: p.Tables,
		Pool: p.Pool, PoolRule: p.PoolRule}
	if j.Effects == nil {
		j.Effects = []string{}
	}
	if j.Targets == nil {
		j.Targets = []string{}
	}
	for _, u := range p.Units {
		j.Units = append(j.Units, unitJSON{DataSource: u.DataSource, Plan: planOf(u.Plan)})
	}
	return j
}

// explainArgs converts command-line arguments for Explain: integers become
// int64, anything else stays a string.
func explainArgs(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if n, err := strconv.ParseInt(a, 10, 64); err == nil {
			out[i] = n
		} else {
			out[i] = a
		}
	}
	return out
}

// openCluster opens rwshard over cfg with health probes on. It returns once
// every node has been probed once (Connector.Ready), so health, roles and
// lag are known.
func openCluster(ctx context.Context, cfg *rwshard.Config) (*sql.DB, *rwshard.Connector, error) {
	cfg = cfg.Clone()
	cfg.Health = true
	cfg.RouteLog = false
	// go-sql-driver logs failed connections to os.Stderr on its own; the
	// report shows node health instead.
	cfg.Backend.Logger = &mysql.NopLogger{}
	c, err := rwshard.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := c.Ready(ctx); err != nil {
		c.Close()
		return nil, nil, err
	}
	return sql.OpenDB(c), c, nil
}
