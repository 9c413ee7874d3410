package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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
                          wait_timeout against rwshard.connMaxLifetime
  explain CONFIG SQL [ARG...]
                          show where a statement would run now, and why
  lag CONFIG              live table of every node: role, up, fenced, lag,
                          in-flight and queries, refreshed every -interval
  lab up|status|down      start, inspect or stop a local MariaDB replication lab
                          (needs mariadbd: apt-get install mariadb-server)
  help [COMMAND]          this text, or a command's flags

CONFIG is an rwshard DSN, the first host being the primary:

  'app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?rwshard.maxReplicaLag=1s'

or a file whose first line that is neither blank nor a # comment is such a
DSN, or a sharding rules file (.yaml/.yml: rwshard's or ShardingSphere-
JDBC's YAML; check then checks every data source). Passwords are never
printed.

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
	// interspersed: flags may follow positional arguments (not for
	// explain, whose SQL arguments may start with "-").
	interspersed bool
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
	return []*command{checkCommand(), explainCommand(), lagCommand(), labCommand()}
}

func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		c := lookup(rest[0])
		if c == nil {
			e.errorf("help: unknown command %q", rest[0])
			fmt.Fprint(stderr, usage)
			return exitUsage
		}
		fs := c.flagSet(stdout)
		c.flags(fs)
		fs.Usage()
		return exitOK
	}
	c := lookup(name)
	if c == nil {
		e.errorf("unknown command %q", name)
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.execute(ctx, e, rest)
}

// execute parses the command's flags and runs it.
func (c *command) execute(ctx context.Context, e *env, args []string) int {
	e.cmd = c
	fs := c.flagSet(e.stderr)
	do := c.flags(fs)
	pos, err := parseArgs(fs, args, c.interspersed)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(e.stdout)
		fs.Usage()
		return exitOK
	}
	if err != nil {
		return exitUsage // the flag package has printed the error and usage
	}
	return do(ctx, e, pos)
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// flagSet returns the command's flag set, its usage printed to w.
func (c *command) flagSet(w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rwshard "+c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: rwshard %s %s\n\n%s\n", c.name, c.args, c.summary)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(out, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseArgs parses flags and returns the positional arguments. With
// interspersed, flags may also follow positional arguments ("lag CONFIG
// -count 1"); "--" ends the flags either way.
func parseArgs(fs *flag.FlagSet, args []string, interspersed bool) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		consumed := len(args) - len(rest)
		if !interspersed || (consumed > 0 && args[consumed-1] == "--") {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports wrong arguments: the message, then the command's
// usage, both to stderr.
func (e *env) usageError(format string, args ...any) int {
	e.errorf(e.cmd.name+": "+format, args...)
	fs := e.cmd.flagSet(e.stderr)
	e.cmd.flags(fs)
	fs.Usage()
	return exitUsage
}

// plural returns "1 problem", "2 problems".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
