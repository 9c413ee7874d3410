package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"
	"time"

	"github.com/rwshard/rwshard"
)

func lagCommand() *command {
	return &command{
		name: "lag",
		args: "CONFIG [-interval D] [-count N]",
		summary: `Opens rwshard over CONFIG with health probes on and prints, every
interval, a table of every node as the router sees it: role, up, fenced,
replication lag, statements in flight, statements sent and errors. The
figures are this process's own connector's (probes every
rwshard.probeInterval), not an application's. Runs until interrupted, or
-count times. Exit status 1 when the last table shows a node down or
fenced.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			interval := fs.Duration("interval", time.Second, "time between refreshes")
			count := fs.Int("count", 0, "number of refreshes; 0: until interrupted")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) != 1 {
					return e.usageError("want one CONFIG, got %d arguments", len(args))
				}
				if *interval <= 0 || *count < 0 {
					return e.usageError("-interval must be > 0 and -count >= 0")
				}
				cfg, err := loadConfig(args[0])
				if err != nil {
					e.errorf("lag: %s", errText(nil, err))
					return exitProblem
				}
				db, c, err := openCluster(ctx, cfg)
				if err != nil {
					e.errorf("lag: %s", errText(cfg, err))
					return exitProblem
				}
				defer db.Close()
				return watchLag(ctx, e.stdout, c, *interval, *count)
			}
		},
	}
}

// watchLag prints count tables (0: until ctx ends), one per interval.
func watchLag(ctx context.Context, w io.Writer, c *rwshard.Connector, interval time.Duration, count int) int {
	clear := isTerminal(w) && count != 1
	t := time.NewTicker(interval)
	defer t.Stop()
	bad := 0
	for i := 0; count == 0 || i < count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return exitCode(bad)
			case <-t.C:
			}
		}
		if clear {
			fmt.Fprint(w, "\033[H\033[2J")
		} else if i > 0 {
			fmt.Fprintln(w)
		}
		bad = printStats(w, c.Stats(), time.Now())
	}
	return exitCode(bad)
}

func exitCode(problems int) int {
	if problems > 0 {
		return exitProblem
	}
	return exitOK
}

// printStats writes one table and returns the number of nodes down or
// fenced.
func printStats(w io.Writer, s rwshard.Stats, now time.Time) int {
	up, fenced := 0, 0
	for _, n := range s.Nodes {
		if n.Up {
			up++
		}
		if n.Fenced {
			fenced++
		}
	}
	fmt.Fprintf(w, "%s  %s: %d up, %d fenced\n", now.Format("15:04:05"), plural(len(s.Nodes), "node"), up, fenced)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tUP\tFENCED\tLAG\tIN_FLIGHT\tQUERIES\tERRORS")
	for _, n := range s.Nodes {
		role, lag := "replica", "unknown"
		if n.Primary {
			role, lag = "primary", "-"
		} else if n.LagKnown && n.Lag == math.MaxInt64 {
			lag = "stopped" // the health monitor's mark of stopped replication
		} else if n.LagKnown {
			lag = n.Lag.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", n.Name, role, yesNo(n.Up), yesNo(n.Fenced), lag,
			n.InFlight, n.Queries, n.Errors)
	}
	tw.Flush()
	return len(s.Nodes) - up + fenced
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// isTerminal reports whether w is a terminal, where the table is redrawn
// in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
