package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// defaultStatePath is where `lab up` records the lab it started.
func defaultStatePath() string { return filepath.Join(os.TempDir(), "rwshard-lab.json") }

func labCommand() *command {
	return &command{
		name:        "lab",
		args:        "up|status|fault|down [flags]",
		subcommands: labSubcommands,
		summary: `Runs a local MariaDB replication lab on 127.0.0.1 (real GTID
replication, the application user without SUPER, as in production):

  lab up [-topology rw|sharded|galera] [-dir D] [-state FILE]
        start the servers, detached from this process, record them in the
        state file and print a ready-to-use DSN; sharded: also write
        sharding rules files for the lab (rwshard's and ShardingSphere-
        JDBC 5.x's YAML) into its directory and create their tables
  lab status [-state FILE] [-dsn | -rules]
        print the recorded lab, whether each server is running (or
        paused by lab fault pause) and its rules files
  lab fault [-state FILE] KIND [NODE [SECONDS]]
        inject a fault into the recorded lab: lag, stop-replication,
        start-replication, kill, restart, pause, resume, switchover (of a
        node), desync, resync, isolate, rejoin (of a Galera node) or
        blackhole (a listener that never answers), to rehearse a failure
        with your program running against the lab
  lab down [-state FILE] [-reap DIR]
        stop the recorded lab (nothing else), remove its directory (with
        the rules files) and the state file; -reap DIR: also kill leftover
        lab servers under DIR

Needs mariadbd (apt-get install mariadb-server). The state file defaults to
` + defaultStatePath() + `. "rwshard help lab SUBCOMMAND" (or "rwshard lab
SUBCOMMAND -h") shows its flags.`,
		flags: func(*flag.FlagSet) func(context.Context, *env, []string) int {
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) == 0 {
					return e.usageError("want a subcommand: up, status, down or fault")
				}
				for _, sub := range labSubcommands() {
					if sub.name == "lab "+args[0] {
						return sub.execute(ctx, e, args[1:])
					}
				}
				return e.usageError("unknown subcommand %q: want up, status, down or fault", args[0])
			}
		},
	}
}

// labSubcommands are lab's: up, status, fault, down.
func labSubcommands() []*command {
	return []*command{labUpCommand(), labStatusCommand(), labFaultCommand(), labDownCommand()}
}

func labUpCommand() *command {
	return &command{
		name: "lab up",
		args: "[flags]",
		summary: `Starts a lab detached from this process (it keeps running after rwshard
exits), records it in the state file and prints its nodes and DSN.
Topology rw: primary, replica1, replica2. Topology sharded: groups ds_0 and
ds_1, one primary and one replica each, one DSN per group, and sharding
rules over both in the lab directory, in rwshard's YAML (` + labRulesFile + `)
and ShardingSphere-JDBC 5.x's (` + labRulesSSFile + `):
t_order and t_order_item bound, in ds_${0..1}.t_…_${0..1} by user_id then
order_id (MOD), order_id from a snowflake generator, t_dict broadcast,
every other table in ds_0. lab up creates these tables on both data
sources; use the rules with "rwshard check FILE" or the DSN
"/?rwshard.rulesFile=FILE" (FILE URL-escaped), as lab up prints.
Topology galera: node1, node2, node3, a Galera cluster (Debian's galera-4
package), and a DSN with rwshard.topology=galera.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			topology := fs.String("topology", "rw", "rw, sharded or galera")
			dir := fs.String("dir", "", "parent of the lab directory (default the temp directory)")
			state := fs.String("state", defaultStatePath(), "state file to write")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) > 0 {
					return e.usageError("unexpected arguments %q", args)
				}
				var opts lab.Options
				switch *topology {
				case "rw":
					opts = lab.RW()
				case "sharded":
					opts = lab.Sharded()
				case "galera":
					opts = lab.Galera()
				default:
					return e.usageError("-topology %q: want rw, sharded or galera", *topology)
				}
				return labUp(ctx, e, opts, *dir, *state)
			}
		},
	}
}

func labUp(ctx context.Context, e *env, opts lab.Options, dir, statePath string) int {
	if s, err := lab.Load(statePath); err == nil {
		for _, n := range s.Nodes {
			if n.Alive() {
				e.errorf("lab up: a lab is already running (%s, state %s); stop it with: %s",
					s.Dir, statePath, downCommandLine(statePath))
				return exitProblem
			}
		}
	}
	if dir == "" {
		dir = os.TempDir()
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		e.errorf("lab up: %v", err)
		return exitProblem
	}
	opts.Dir, opts.Detach = dir, true

	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	begin := time.Now()
	l, err := lab.Start(ctx, opts)
	if err != nil {
		e.errorf("lab up: %v", err)
		return exitProblem
	}
	if err := l.Save(statePath); err != nil {
		_ = l.Stop()
		e.errorf("lab up: %v (the lab was stopped)", err)
		return exitProblem
	}
	s := l.State()
	if len(s.Groups()) > 1 {
		if _, err := setUpLabRules(ctx, &s); err != nil {
			_ = l.Stop()
			_ = os.Remove(statePath)
			e.errorf("lab up: sharding rules: %v (the lab was stopped)", err)
			return exitProblem
		}
	}
	fmt.Fprintf(e.stdout, "lab up in %s: %s\nstate: %s\n\n", time.Since(begin).Round(100*time.Millisecond), s.Dir, statePath)
	printLab(e.stdout, &s, false)
	fmt.Fprintf(e.stdout, "\nstop it with: %s\n", downCommandLine(statePath))
	return exitOK
}

// downCommandLine is the command that stops the lab recorded at statePath.
func downCommandLine(statePath string) string {
	if statePath == defaultStatePath() {
		return "rwshard lab down"
	}
	return "rwshard lab down -state " + statePath
}

func labStatusCommand() *command {
	return &command{
		name:         "lab status",
		args:         "[flags]",
		summary:      "Prints the lab recorded in the state file, whether each server is running (or\npaused by lab fault pause), and its sharding rules files. Exit status 1 when\nthere is no lab or a server is not running.",
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			state := fs.String("state", defaultStatePath(), "state file written by lab up")
			dsnOnly := fs.Bool("dsn", false, "print only the DSN, one line per group")
			rulesOnly := fs.Bool("rules", false, "print only the paths of the sharding rules files, rwshard's dialect first\n(none for a lab without them)")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) > 0 {
					return e.usageError("unexpected arguments %q", args)
				}
				if *dsnOnly && *rulesOnly {
					return e.usageError("-dsn and -rules: choose one")
				}
				s, err := lab.Load(*state)
				if errors.Is(err, os.ErrNotExist) {
					e.errorf("lab status: no lab recorded at %s; start one with: rwshard lab up", *state)
					return exitProblem
				}
				if err != nil {
					e.errorf("lab status: %v", err)
					return exitProblem
				}
				down := 0
				for _, n := range s.Nodes {
					if !n.Alive() {
						down++
					}
				}
				switch {
				case *dsnOnly:
					for _, g := range groupDSNs(s) {
						fmt.Fprintln(e.stdout, g.dsn)
					}
				case *rulesOnly:
					for _, f := range labRulesFiles(s) {
						fmt.Fprintln(e.stdout, f.path)
					}
				default:
					fmt.Fprintf(e.stdout, "lab %s\nstate: %s\n\n", s.Dir, *state)
					printLab(e.stdout, s, true)
				}
				if down > 0 {
					e.errorf("lab status: %d of %d servers are not running; clean up with: %s",
						down, len(s.Nodes), downCommandLine(*state))
					return exitProblem
				}
				return exitOK
			}
		},
	}
}

func labDownCommand() *command {
	return &command{
		name: "lab down",
		args: "[flags]",
		summary: `Stops the lab recorded in the state file: kills its servers (only
processes that are still that lab's servers), removes its directory and the
state file (and so the sharding rules files of lab up -topology sharded,
which live there). It touches nothing else. With -reap DIR it also kills lab
servers left running whose data directory is under DIR (labs whose state
was lost, started with lab up -dir DIR); their directories are kept.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			state := fs.String("state", defaultStatePath(), "state file written by lab up")
			reap := fs.String("reap", "", "also kill leftover lab servers whose data directory is under this directory")
			return func(ctx context.Context, e *env, args []string) int {
				if len(args) > 0 {
					return e.usageError("unexpected arguments %q", args)
				}
				return labDown(e, *state, *reap)
			}
		},
	}
}

func labDown(e *env, statePath, reapDir string) int {
	code := exitOK
	s, err := lab.Load(statePath)
	switch {
	case err == nil:
		killed, err := s.Stop()
		if err != nil {
			e.errorf("lab down: %v (state kept in %s)", err, statePath)
			code = exitProblem
			break
		}
		if err := os.Remove(statePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			e.errorf("lab down: %v", err)
			code = exitProblem
		}
		fmt.Fprintf(e.stdout, "stopped lab %s: killed %s, removed its directory and %s\n",
			s.Dir, plural(killed, "server"), statePath)
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(e.stdout, "no lab recorded at %s: nothing stopped\n", statePath)
	default:
		e.errorf("lab down: %v", err)
		code = exitProblem
	}
	if reapDir == "" {
		return code
	}
	abs, err := filepath.Abs(reapDir)
	if err != nil || abs == filepath.Clean(os.TempDir()) || abs == "/" {
		e.errorf("lab down: -reap %s: name the directory a lab was started in (lab up -dir), not the temp directory itself: other labs, of tests and other users, run there", reapDir)
		return exitUsage
	}
	n := lab.ReapIn(abs)
	fmt.Fprintf(e.stdout, "reaped %s under %s\n", plural(n, "leftover lab server"), abs)
	return code
}

// groupDSN is the rwshard DSN of one replication group.
type groupDSN struct {
	group, dsn string
}

// groupDSNs returns one DSN per group as the application user, the
// group's primary first; a Galera cluster's nodes in their order, with
// the topology and the lab's node names.
func groupDSNs(s *lab.State) []groupDSN {
	var out []groupDSN
	for _, g := range s.Groups() {
		var hosts, names []string
		add := func(n lab.NodeState) {
			hosts, names = append(hosts, "tcp("+n.Addr()+")"), append(names, n.Name)
		}
		p := s.Primary(g)
		galera := p != nil && p.Galera != nil
		if p != nil && !galera {
			add(*p)
		}
		for _, n := range s.Nodes {
			if n.Group == g && (galera || !n.Primary) {
				add(n)
			}
		}
		dsn := fmt.Sprintf("%s:%s@%s/%s", lab.AppUser, lab.AppPassword, strings.Join(hosts, ","), lab.AppDatabase)
		if galera {
			dsn += "?rwshard.topology=galera&rwshard.names=" + strings.Join(names, ",")
		}
		out = append(out, groupDSN{group: g, dsn: dsn})
	}
	return out
}

// printLab writes the lab's nodes as a table, then its DSNs.
func printLab(w io.Writer, s *lab.State, withAlive bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "NODE\tGROUP\tROLE\tSERVER_ID\tADDRESS\tPID"
	if withAlive {
		head += "\tRUNNING"
	}
	fmt.Fprintln(tw, head)
	for _, n := range s.Nodes {
		role := "replica"
		switch {
		case n.Galera != nil:
			role = "galera" // every node writable; rwshard chooses the writer
		case n.Primary:
			role = "primary"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d", n.Name, n.Group, role, n.ServerID, n.Addr(), n.PID)
		if withAlive {
			running := yesNo(n.Alive())
			if n.Paused() {
				running = "paused"
			}
			fmt.Fprintf(tw, "\t%s", running)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	dsns := groupDSNs(s)
	fmt.Fprintf(w, "\nrwshard DSN (user %s, database %s; the lab's own password, not a secret):\n", lab.AppUser, lab.AppDatabase)
	if len(dsns) == 1 {
		fmt.Fprintf(w, "  %s\n", dsns[0].dsn)
		return
	}
	fmt.Fprintln(w, "one per group, each a data source alone:")
	for _, g := range dsns {
		fmt.Fprintf(w, "  %s: %s\n", g.group, g.dsn)
	}
	printLabRules(w, labRulesFiles(s))
}
