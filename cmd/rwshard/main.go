package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitProblem = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: rwshard COMMAND [flags] [arguments]

Commands:
  check CONFIG            connect to every node and report reachability, version,
                          role, read_only, replication threads and delay, and
                          wait_timeout against rwshard.connMaxLifetime; with a
                          sharding rules file, first prove that every target
                          its algorithms can pick is a data node, then that
                          every data node (physical table) exists with its
                          sharding columns
  explain CONFIG SQL [ARG...]
                          show where a statement would run now, and why
  fleet CONFIG            which programs run which rwshard version and which
                          sharding rules, with their connection counts, from
                          performance_schema.session_connect_attrs
  lag CONFIG              live table of every node: role, up, fenced, lag,
                          in-flight, queries and why a node is out, refreshed
                          every -interval
  lab up|status|fault|down
                          start, inspect, break or stop a local MariaDB
                          replication lab (needs mariadbd: apt-get install
                          mariadb-server); -topology sharded also writes its
                          sharding rules files; fault kills, restarts, pauses,
                          lags or switches over a node, or runs a blackhole
  version                 rwshard's version, VCS revision and Go version
  help [COMMAND]          this text, or a command's flags

Flags go anywhere after the command (-flag or --flag); "--" ends them, and
an argument that is a number ("-5", "-1.5") is never a flag. check, explain,
fleet and lag take -json (one JSON document on stdout; lag: one JSON object per
refresh) and -defaults-file FILE.

CONFIG is an rwshard DSN, the first host being the primary:

  'app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?rwshard.maxReplicaLag=1s'

or a file whose first line that is neither blank nor a # comment is such a
DSN, or a sharding rules file (.yaml/.yml: rwshard's or ShardingSphere-
JDBC's YAML; check then checks every data source and its data nodes).

A CONFIG without a password takes it from the environment variable
RWSHARD_PASSWORD, else from the [client] section of the MySQL option file
-defaults-file FILE, else of ~/.my.cnf if there is one (whose user, too,
fills a CONFIG without one); a sharding rules file's data sources are left
as they are. Passwords are never printed.

Exit status: 0 ok, 1 problems found, 2 usage error.
`

// command is one subcommand: its flags and what it does with the
// arguments left after them.
type command struct {
	name    string
	args    string // argument synopsis for the usage line
	summary string
	// flags declares the command's flags on fs and returns the function
	// that runs it with the positional arguments.
	flags func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) int
	// interspersed: flags may follow positional arguments. Not for lab,
	// whose first argument is a subcommand with flags of its own.
	interspersed bool
	// subcommands: lab's up, status and down, for help.
	subcommands func() []*command
}

// env carries the output streams and the command being run.
type env struct {
	stdout, stderr io.Writer
	cmd            *command
}

// errorf prints a message to stderr with the program's prefix.
func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "rwshard: "+format+"\n", args...)
}

func commands() []*command {
	return []*command{checkCommand(), explainCommand(), fleetCommand(), lagCommand(), labCommand(), versionCommand()}
}

// commandList names the commands for an error message.
func commandList() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(append(names, "help"), ", ")
}

func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: rwshard COMMAND [flags] [arguments]\ncommands: %s\nrun 'rwshard help' for details\n", commandList())
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		c := lookup(commands(), rest[0])
		if c == nil {
			e.errorf("help: unknown command %q; commands: %s", rest[0], commandList())
			return exitUsage
		}
		if len(rest) > 1 && c.subcommands != nil {
			sub := lookup(c.subcommands(), c.name+" "+rest[1])
			if sub == nil {
				e.errorf("help: %s has no subcommand %q", c.name, rest[1])
				return exitUsage
			}
			c = sub
		}
		c.help(stdout)
		return exitOK
	}
	c := lookup(commands(), name)
	if c == nil {
		e.errorf("unknown command %q; commands: %s", name, commandList())
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.execute(ctx, e, rest)
}

// execute parses the command's flags and runs it.
func (c *command) execute(ctx context.Context, e *env, args []string) int {
	e.cmd = c
	fs := c.flagSet()
	do := c.flags(fs)
	pos, err := parseArgs(fs, args, c.interspersed)
	if errors.Is(err, flag.ErrHelp) {
		c.help(e.stdout)
		return exitOK
	}
	if err != nil {
		return e.usageError("%s", flagError(err))
	}
	return do(ctx, e, pos)
}

func lookup(cmds []*command, name string) *command {
	for _, c := range cmds {
		if c.name == name {
			return c
		}
	}
	return nil
}

// flagSet returns a flag set for the command that prints nothing itself:
// execute reports a flag error in short, and help prints the full text.
func (c *command) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("rwshard "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// help writes the command's full usage: synopsis, summary and flags.
func (c *command) help(w io.Writer) {
	fs := c.flagSet()
	c.flags(fs)
	fmt.Fprintf(w, "usage: rwshard %s %s\n\n%s\n", c.name, c.args, c.summary)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// parseArgs parses flags and returns the positional arguments. With
// interspersed, flags may also follow positional arguments ("lag CONFIG
// -count 1"); without, the first positional argument ends the flags.
// Either way "--" ends them, and an argument that is a number ("-5",
// "-1.5", an explain ARG) is positional, not a flag. A flag's value is
// the argument after it whatever it looks like ("-count -1").
func parseArgs(fs *flag.FlagSet, args []string, interspersed bool) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return append(pos, args[1:]...), nil
		case !isFlag(a) && !interspersed:
			return append(pos, args...), nil
		case !isFlag(a):
			pos = append(pos, a)
			args = args[1:]
			continue
		}
		// Parse this one flag (and its value): fs.Parse would take a
		// number after it for a flag.
		n := flagWidth(fs, a, len(args))
		if err := fs.Parse(args[:n]); err != nil {
			return nil, err
		}
		args = args[n:]
	}
	return pos, nil
}

// isFlag reports whether a looks like a flag: a "-" followed by something
// that does not make it a number.
func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(a, 64)
	return err != nil
}

// flagWidth is the number of arguments, of the remaining n, that the flag
// a takes: 1 for -name=value, a boolean flag or an unknown one (fs.Parse
// reports it), 2 for a flag whose value follows.
func flagWidth(fs *flag.FlagSet, a string, n int) int {
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if strings.Contains(name, "=") {
		return 1
	}
	f := fs.Lookup(name)
	if f == nil {
		return 1
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return 1
	}
	return min(2, n)
}

// flagError is the flag package's message ("flag provided but not
// defined: -x", "invalid value "x" for flag -timeout: parse error"),
// without the invalid value when it has an @: a DSN, maybe with its
// password, given where a flag's value was expected.
func flagError(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok && strings.Contains(rest, "@") {
		if i := strings.LastIndex(rest, " for flag -"); i >= 0 {
			return "invalid value" + rest[i:]
		}
	}
	return msg
}

// usageError reports wrong arguments in short, to stderr: the message, the
// command's synopsis and where the details are.
func (e *env) usageError(format string, args ...any) int {
	e.errorf(e.cmd.name+": "+format, args...)
	fmt.Fprintf(e.stderr, "usage: rwshard %s %s\nrun 'rwshard help %s' for details\n", e.cmd.name, e.cmd.args, e.cmd.name)
	return exitUsage
}

// plural returns "1 problem", "2 problems".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// writeJSON prints v as one indented JSON document on stdout.
func writeJSON(e *env, v any) int {
	if err := encodeJSON(e.stdout, v, false); err != nil {
		e.errorf("%s: %v", e.cmd.name, err)
		return exitProblem
	}
	return exitOK
}

// encodeJSON writes v as JSON, indented unless compact (one line, as
// lag's NDJSON). HTML characters stay as they are.
func encodeJSON(w io.Writer, v any, compact bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if !compact {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}
