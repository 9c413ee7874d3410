package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// lab fault injects one fault into the lab that lab up started, from a
// process that is not its servers' parent: it attaches to the recorded
// servers (lab.Attach), runs the lab's own fault function, the one the
// tests use, and saves the state file again when the fault changes what it
// records (a pid, a group's primary), so that lab status and lab down stay
// right.

// faultKind is one KIND of lab fault.
type faultKind struct {
	name    string
	args    string // what follows KIND: "NODE", "NODE SECONDS" or ""
	replica bool   // NODE must be one of its group's replicas now (not a Galera node)
	galera  bool   // NODE must be a Galera node
	running bool   // NODE must be running (restart: must not be)
	saves   bool   // the fault changes the state file's pids or primaries
	run     func(ctx context.Context, l *lab.Lab, n *lab.Node, delay time.Duration) (string, error)
}

// faultKinds are lab fault's kinds, in the order help lists them.
func faultKinds(statePath string) []faultKind {
	again := func(kind, node string) string { return faultCommandLine(statePath, kind, node) }
	// switched is a Galera fault that sets a node's state on or off
	// (set), and says what the node is then (is) and which kind undoes
	// it ("" none).
	switched := func(name string, set func(*lab.Lab, context.Context, *lab.Node, bool) error, on bool, is, undo string) faultKind {
		return faultKind{name: name, args: "NODE", galera: true, running: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				if err := set(l, ctx, n, on); err != nil {
					return "", err
				}
				msg := n.Name + " " + is
				if undo != "" {
					msg += "; undo it with: " + again(undo, n.Name)
				}
				return msg, nil
			}}
	}
	return []faultKind{
		{name: "lag", args: "NODE SECONDS", replica: true, running: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, d time.Duration) (string, error) {
				if err := l.Lag(ctx, n, d); err != nil {
					return "", err
				}
				if d == 0 {
					return fmt.Sprintf("%s applies events again as soon as they arrive (MASTER_DELAY=0)", n.Name), nil
				}
				return fmt.Sprintf("%s applies each event %s after the primary wrote it (MASTER_DELAY=%d); "+
					"Seconds_Behind_Master can still read 0 while the primary is idle; remove the delay with: %s",
					n.Name, d, int(d.Seconds()), again("lag", n.Name+" 0")), nil
			}},
		{name: "stop-replication", args: "NODE", replica: true, running: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				if err := l.StopReplication(ctx, n); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s stopped replicating (IO and SQL threads); start it again with: %s",
					n.Name, again("start-replication", n.Name)), nil
			}},
		{name: "start-replication", args: "NODE", replica: true, running: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				if err := l.StartReplication(ctx, n); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s replicates again", n.Name), nil
			}},
		{name: "kill", args: "NODE", running: true, saves: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				pid := nodePID(l, n)
				if err := l.Kill(n); err != nil {
					return "", err
				}
				return fmt.Sprintf("killed %s (pid %d, SIGKILL, like a crash); %s refuses connections; "+
					"bring it back with: %s", n.Name, pid, n.Addr(), again("restart", n.Name)), nil
			}},
		{name: "restart", args: "NODE", saves: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				if err := l.Restart(ctx, n); err != nil {
					return "", err
				}
				msg := fmt.Sprintf("restarted %s (pid %d) on %s with its data", n.Name, nodePID(l, n), n.Addr())
				switch {
				case n.Galera():
					msg += "; it joined the cluster again and is Synced"
				case isReplica(l, n):
					msg += "; it resumes replication by itself"
				}
				return msg, nil
			}},
		{name: "pause", args: "NODE", running: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				if err := l.Pause(n); err != nil {
					return "", err
				}
				return fmt.Sprintf("paused %s (pid %d, SIGSTOP, like a hung host): connections open and nothing "+
					"answers; resume it with: %s", n.Name, nodePID(l, n), again("resume", n.Name)), nil
			}},
		{name: "resume", args: "NODE", running: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				if err := l.Resume(n); err != nil {
					return "", err
				}
				return fmt.Sprintf("resumed %s (pid %d, SIGCONT)", n.Name, nodePID(l, n)), nil
			}},
		{name: "switchover", args: "NODE", replica: true, running: true, saves: true,
			run: func(ctx context.Context, l *lab.Lab, n *lab.Node, _ time.Duration) (string, error) {
				old := groupOf(l, n).Primary()
				if err := l.Switchover(ctx, n); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s is the primary of %s; %s is read-only and replicates from it, as do the "+
					"other replicas", n.Name, n.Group, old.Name), nil
			}},
		switched("desync", (*lab.Lab).Desync, true, "is desynced (wsrep_desync=ON, as before a backup): it "+
			"leaves flow control and serves no reads or writes through rwshard", "resync"),
		switched("resync", (*lab.Lab).Desync, false, "is Synced again (wsrep_desync=OFF)", ""),
		switched("isolate", (*lab.Lab).Isolate, true, "is cut off from the cluster (gmcast.isolate=1): it is "+
			"non-Primary and answers queries with error 1047, the others go on", "rejoin"),
		switched("rejoin", (*lab.Lab).Isolate, false, "joined the cluster again and is Synced", ""),
		{name: "blackhole"},
	}
}

func labFaultCommand() *command {
	return &command{
		name: "lab fault",
		args: "[flags] KIND [NODE [SECONDS]]",
		summary: `Injects one fault into the lab recorded in the state file (lab up), to
rehearse a failure with a program running against the lab. NODE is a name
as lab status prints it (primary, replica1, …; ds_0-primary, … in a
sharded lab; node1, … in a Galera lab). KIND is one of:

  lag NODE SECONDS        delay a replica's applier (MASTER_DELAY); 0 removes
                          the delay. Seconds_Behind_Master can still read 0
  stop-replication NODE   stop both replication threads of a replica
  start-replication NODE  start them again
  kill NODE               SIGKILL a server, like a crash
  restart NODE            start a killed server again with its data, port and
                          role; a replica resumes replication by itself
  pause NODE              SIGSTOP a server, like a hung host: connections
                          open and nothing answers
  resume NODE             SIGCONT a paused server
  switchover NODE         make the replica NODE the primary of its group: the
                          old primary goes read-only and replicates from it,
                          and so do the other replicas
  desync NODE             Galera: set wsrep_desync on NODE, as before a backup
  resync NODE             Galera: clear it and wait until NODE is Synced
  isolate NODE            Galera: cut NODE off from the cluster; it answers
                          error 1047 while the others go on
  rejoin NODE             Galera: let it join again and wait until Synced
  blackhole               listen on 127.0.0.1, accept TCP connections and
                          never answer; prints the address to use as a host
                          in a DSN and runs until interrupted, or for -for

kill, restart and switchover update the state file (pids, primary), so
that lab status and lab down stay right. A rehearsal:

  rwshard lab up
  your-program -dsn "$(rwshard lab status -dsn)" &
  rwshard lab fault kill replica1
  rwshard lab fault restart replica1
  rwshard lab down

Exit status 2 for a wrong KIND, NODE or SECONDS, 1 when the fault fails.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			state := fs.String("state", defaultStatePath(), "state file written by lab up")
			dur := fs.Duration("for", 0, "blackhole: stop after this long (default: run until interrupted)")
			return func(ctx context.Context, e *env, args []string) int {
				return labFault(ctx, e, *state, *dur, args)
			}
		},
	}
}

func labFault(ctx context.Context, e *env, statePath string, dur time.Duration, args []string) int {
	kinds := faultKinds(statePath)
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
	}
	if len(args) == 0 {
		return e.usageError("want a fault KIND: %s", strings.Join(names, ", "))
	}
	var k *faultKind
	for i := range kinds {
		if kinds[i].name == args[0] {
			k = &kinds[i]
		}
	}
	if k == nil {
		return e.usageError("unknown fault %s: want %s", shownArg(args[0]), strings.Join(names, ", "))
	}
	if k.name == "blackhole" {
		if len(args) > 1 {
			return e.usageError("blackhole takes no NODE or other argument, got %s", plural(len(args)-1, "argument"))
		}
		if dur < 0 {
			return e.usageError("blackhole: -for %s: want a duration >= 0", dur)
		}
		return labBlackhole(ctx, e, statePath, dur)
	}
	if dur != 0 {
		return e.usageError("%s: -for applies to blackhole only", k.name)
	}

	s, loadErr := lab.Load(statePath)
	want := len(strings.Fields(k.args))
	if len(args)-1 != want {
		msg := fmt.Sprintf("%s: want %s, got %s", k.name, k.args, plural(len(args)-1, "argument"))
		if loadErr == nil {
			msg += "; nodes: " + strings.Join(nodeNames(s.Nodes, nil), ", ")
		}
		return e.usageError("%s", msg)
	}
	if errors.Is(loadErr, os.ErrNotExist) {
		e.errorf("lab fault: no lab recorded at %s; start one with: rwshard lab up", statePath)
		return exitProblem
	}
	if loadErr != nil {
		e.errorf("lab fault: %v", loadErr)
		return exitProblem
	}
	name := args[1]
	var ns *lab.NodeState
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			ns = &s.Nodes[i]
		}
	}
	if ns == nil {
		return e.usageError("%s: no node %s in the lab at %s; nodes: %s",
			k.name, shownArg(name), s.Dir, strings.Join(nodeNames(s.Nodes, nil), ", "))
	}
	galera := ns.Galera != nil
	switch {
	case k.galera && !galera:
		return e.usageError("%s: %s is not a Galera node; %s applies to a Galera lab (lab up -topology galera)", k.name, name, k.name)
	case k.replica && galera:
		return e.usageError("%s: %s is a Galera node; %s applies to a replica of a primary (lab up -topology rw)", k.name, name, k.name)
	}
	if k.replica && ns.Primary {
		replicas := nodeNames(s.Nodes, func(n lab.NodeState) bool { return n.Group == ns.Group && !n.Primary })
		if k.name == "switchover" {
			return e.usageError("switchover: %s is already the primary of %s; choose one of its replicas: %s",
				name, ns.Group, strings.Join(replicas, ", "))
		}
		return e.usageError("%s: %s is the primary of %s; %s applies to a replica: %s",
			k.name, name, ns.Group, k.name, strings.Join(replicas, ", "))
	}
	var delay time.Duration
	if k.name == "lag" {
		d, err := parseDelay(args[2])
		if err != nil {
			return e.usageError("lag %s: SECONDS %s: %v", name, shownArg(args[2]), err)
		}
		delay = d
	}
	switch {
	case k.running && !ns.Alive():
		e.errorf("lab fault %s %s: %s is not running; start it with: %s",
			k.name, name, name, faultCommandLine(statePath, "restart", name))
		return exitProblem
	case k.name == "restart" && ns.Alive():
		e.errorf("lab fault restart %s: %s is running (pid %d); kill it first: %s",
			name, name, ns.PID, faultCommandLine(statePath, "kill", name))
		return exitProblem
	}

	l, err := lab.Attach(s)
	if err != nil {
		e.errorf("lab fault %s %s: %v", k.name, name, err)
		return exitProblem
	}
	defer l.Release()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	msg, runErr := k.run(ctx, l, l.Node(name), delay)
	code := exitOK
	if runErr != nil {
		e.errorf("lab fault %s %s: %v", k.name, name, runErr)
		code = exitProblem
	}
	// Saved whether or not the fault went through: the file records what
	// is running now, which a half-done kill or switchover changed too.
	if k.saves {
		if err := l.Save(statePath); err != nil {
			e.errorf("lab fault %s %s: %v", k.name, name, err)
			code = exitProblem
		}
	}
	if runErr == nil {
		fmt.Fprintln(e.stdout, msg)
		if k.saves {
			fmt.Fprintf(e.stdout, "state updated: %s\n", statePath)
		}
	}
	return code
}

// shownArg quotes an argument for an error message, unless it has an @:
// a DSN, maybe with its password, given where a name was expected.
func shownArg(a string) string {
	if strings.Contains(a, "@") {
		return "(an argument with @, not shown)"
	}
	return strconv.Quote(a)
}

// parseDelay reads lag's SECONDS: a whole number of seconds, or a Go
// duration in whole seconds ("5s", "1m").
func parseDelay(arg string) (time.Duration, error) {
	if n, err := strconv.Atoi(arg); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	if d, err := time.ParseDuration(arg); err == nil && d >= 0 && d%time.Second == 0 {
		return d, nil
	}
	return 0, errors.New("want a whole number of seconds >= 0 (0 removes the delay)")
}

// nodeNames lists the names of the nodes keep accepts (all if nil).
func nodeNames(nodes []lab.NodeState, keep func(lab.NodeState) bool) []string {
	var out []string
	for _, n := range nodes {
		if keep == nil || keep(n) {
			out = append(out, n.Name)
		}
	}
	return out
}

// faultCommandLine is the lab fault command that injects kind into node
// of the lab recorded at statePath.
func faultCommandLine(statePath, kind, node string) string {
	line := "rwshard lab fault " + kind + " " + node
	if statePath != defaultStatePath() {
		line += " -state " + statePath
	}
	return line
}

// nodePID is n's pid in l's current state (0: not running).
func nodePID(l *lab.Lab, n *lab.Node) int {
	for _, s := range l.State().Nodes {
		if s.Name == n.Name {
			return s.PID
		}
	}
	return 0
}

func groupOf(l *lab.Lab, n *lab.Node) *lab.Group {
	for _, g := range l.Groups {
		if g.Name == n.Group {
			return g
		}
	}
	return nil
}

func isReplica(l *lab.Lab, n *lab.Node) bool { return groupOf(l, n).Primary() != n }

// labBlackhole listens on 127.0.0.1, accepts TCP connections and never
// answers until ctx ends (SIGINT, SIGTERM) or d passes (if d > 0), and
// prints the address and, when a lab is recorded, its DSN with the
// blackhole as one more replica.
func labBlackhole(ctx context.Context, e *env, statePath string, d time.Duration) int {
	b, err := lab.NewBlackhole()
	if err != nil {
		e.errorf("lab fault blackhole: %v", err)
		return exitProblem
	}
	defer b.Close()
	fmt.Fprintf(e.stdout, "blackhole listening on %s: it accepts TCP connections and never answers\n", b.Addr())
	if s, err := lab.Load(statePath); err == nil {
		fmt.Fprintf(e.stdout, "as one more replica of the lab (user %s; the lab's own password, not a secret):\n", lab.AppUser)
		for _, g := range groupDSNs(s) {
			fmt.Fprintf(e.stdout, "  %s\n", withHost(g.dsn, b.Addr()))
		}
	}
	until := "until interrupted (Ctrl-C)"
	if d > 0 {
		until = "for " + d.String() + " or until interrupted"
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	fmt.Fprintf(e.stdout, "running %s\n", until)
	<-ctx.Done()
	fmt.Fprintf(e.stdout, "blackhole closed after accepting %s\n", plural(b.Accepted(), "connection"))
	return exitOK
}

// withHost adds addr as the last host of an rwshard DSN "user:pw@hosts/db".
func withHost(dsn, addr string) string {
	i := strings.LastIndex(dsn, ")/")
	if i < 0 {
		return dsn
	}
	return dsn[:i+1] + ",tcp(" + addr + ")" + dsn[i+1:]
}
