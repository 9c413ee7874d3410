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
		args: "[flags] CONFIG",
		summary: `Opens rwshard over CONFIG with health probes on and prints, every
interval, a table of every node as the router sees it: role, up, fenced,
replication lag, statements in flight, statements sent, errors, and why a
node is out of rotation or fenced (the reason of Connector.Health: "down:
…", "fenced: replication stopped", "fenced: lag … over maxReplicaLag …").
The figures are this process's own connector's (probes every
rwshard.probeInterval), not an application's. Runs until interrupted, or
-count times. Exit status 1 when the last table shows a node down or
fenced.

With -json, each refresh is one line of JSON (NDJSON), without screen
clearing: {"time": RFC 3339, "nodes": [{"name", "role", "up", "fenced",
"lag_seconds", "in_flight", "queries", "errors", "reason"}]}; lag_seconds
is null when unknown (and for the primary), -1 when replication stopped.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			interval := fs.Duration("interval", time.Second, "time between refreshes")
			count := fs.Int("count", 0, "number of refreshes; 0: until interrupted")
			conn := addConnFlags(fs, "print each refresh as one line of JSON")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) != 1 {
					return e.usageError("want one CONFIG, got %d arguments", len(args))
				}
				if *interval <= 0 || *count < 0 {
					return e.usageError("-interval must be > 0 and -count >= 0")
				}
				cfg, err := conn.config(args[0])
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
				return watchLag(ctx, e.stdout, c, *interval, *count, *conn.json)
			}
		},
	}
}

// watchLag prints count refreshes (0: until ctx ends), one per interval:
// tables, redrawn in place on a terminal, or lines of JSON.
func watchLag(ctx context.Context, w io.Writer, c *rwshard.Connector, interval time.Duration, count int, asJSON bool) int {
	print := printStats
	if asJSON {
		print = printStatsJSON
	}
	clear := !asJSON && isTerminal(w) && count != 1
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
		} else if i > 0 && !asJSON {
			fmt.Fprintln(w)
		}
		bad = print(w, c.Stats(), c.Health(), time.Now())
	}
	return exitCode(bad)
}

func exitCode(problems int) int {
	if problems > 0 {
		return exitProblem
	}
	return exitOK
}

// reasons maps every node of h to why it is out of rotation or fenced (""
// when it serves).
func reasons(h rwshard.Health) map[string]string {
	m := map[string]string{}
	for _, g := range h.Groups {
		for _, n := range g.Nodes {
			m[n.Name] = n.Reason
		}
	}
	return m
}

// nodeCounts counts the nodes up and the nodes fenced.
func nodeCounts(s rwshard.Stats) (up, fenced int) {
	for _, n := range s.Nodes {
		if n.Up {
			up++
		}
		if n.Fenced {
			fenced++
		}
	}
	return up, fenced
}

// printStats writes one table and returns the number of nodes down or
// fenced.
func printStats(w io.Writer, s rwshard.Stats, h rwshard.Health, now time.Time) int {
	up, fenced := nodeCounts(s)
	why := reasons(h)
	fmt.Fprintf(w, "%s  %s: %d up, %d fenced\n", now.Format("15:04:05"), plural(len(s.Nodes), "node"), up, fenced)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tUP\tFENCED\tLAG\tIN_FLIGHT\tQUERIES\tERRORS\tREASON")
	for _, n := range s.Nodes {
		role, lag := "replica", "unknown"
		if n.Primary {
			role, lag = "primary", "-"
		} else if n.LagKnown && n.Lag == math.MaxInt64 {
			lag = "stopped" // the health monitor's mark of stopped replication
		} else if n.LagKnown {
			lag = n.Lag.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", n.Name, role, yesNo(n.Up), yesNo(n.Fenced), lag,
			n.InFlight, n.Queries, n.Errors, orDash(why[n.Name]))
	}
	tw.Flush()
	return len(s.Nodes) - up + fenced
}

// lagJSON is one refresh with -json.
type lagJSON struct {
	Time  time.Time     `json:"time"`
	Nodes []lagNodeJSON `json:"nodes"`
}

type lagNodeJSON struct {
	Name   string `json:"name"`
	Role   string `json:"role"` // primary or replica
	Up     bool   `json:"up"`
	Fenced bool   `json:"fenced"`
	// LagSeconds is null when unknown or for the primary, -1 when
	// replication stopped.
	LagSeconds *float64 `json:"lag_seconds"`
	InFlight   int64    `json:"in_flight"`
	Queries    uint64   `json:"queries"`
	Errors     uint64   `json:"errors"`
	Reason     string   `json:"reason"` // why it is out or fenced; "" when it serves
}

// printStatsJSON writes one refresh as one line of JSON and returns the
// number of nodes down or fenced.
func printStatsJSON(w io.Writer, s rwshard.Stats, h rwshard.Health, now time.Time) int {
	up, fenced := nodeCounts(s)
	why := reasons(h)
	out := lagJSON{Time: now.Round(time.Millisecond), Nodes: []lagNodeJSON{}}
	for _, n := range s.Nodes {
		j := lagNodeJSON{Name: n.Name, Role: "replica", Up: n.Up, Fenced: n.Fenced, InFlight: n.InFlight,
			Queries: n.Queries, Errors: n.Errors, Reason: why[n.Name]}
		switch {
		case n.Primary:
			j.Role = "primary"
		case n.LagKnown && n.Lag == math.MaxInt64:
			stopped := -1.0
			j.LagSeconds = &stopped
		case n.LagKnown:
			v := n.Lag.Seconds()
			j.LagSeconds = &v
		}
		out.Nodes = append(out.Nodes, j)
	}
	_ = encodeJSON(w, out, true) // as the table, a failed write to stdout is not reported
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
