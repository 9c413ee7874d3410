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
)

func explainCommand() *command {
	return &command{
		name: "explain",
		args: "[-timeout D] CONFIG SQL [ARG...]",
		summary: `Opens rwshard over CONFIG with health probes on, waits for the first
probe of every node, and prints where SQL would run now and why: the
statement's kind, the routing reason, the nodes that may run it, the hint
and consistency rule that applied. The statement is not run. Hints in SQL
comments apply (/* rwshard:primary */ SELECT …). ARGs that are integers are
passed as int64, others as strings. Flags go before CONFIG.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			timeout := fs.Duration("timeout", 10*time.Second, "bound on connecting, the first probes and the plan")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) < 2 {
					return e.usageError("want CONFIG and SQL, got %d arguments", len(args))
				}
				cfg, err := loadConfig(args[0])
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
				fmt.Fprintln(e.stdout, plan.String())
				return exitOK
			}
		},
	}
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
