package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rwshard/rwshard"
)

// connFlags are the flags of the commands that connect (check, explain,
// lag): the output format, and the option file a password missing from
// CONFIG comes from.
type connFlags struct {
	json         *bool
	defaultsFile *string
}

func addConnFlags(fs *flag.FlagSet, jsonUsage string) *connFlags {
	return &connFlags{
		json: fs.Bool("json", false, jsonUsage),
		defaultsFile: fs.String("defaults-file", "", "take a password missing from CONFIG (and a user) from the [client] section of the\n"+
			"MySQL option file `FILE` when "+passwordEnv+" is not set (default ~/.my.cnf, if it exists)"),
	}
}

// config loads CONFIG (loadConfig) and fills in a missing password (and
// user) as fillCredentials does.
func (f *connFlags) config(arg string) (*rwshard.Config, error) {
	cfg, err := loadConfig(arg)
	if err != nil {
		return nil, err
	}
	if err := fillCredentials(cfg, *f.defaultsFile); err != nil {
		return nil, err
	}
	return cfg, nil
}

// reportFlags are the flags of the commands that read every node once
// (check, fleet): a bound on the statements run on each, and connFlags.
type reportFlags struct {
	*connFlags
	timeout *time.Duration
}

func addReportFlags(fs *flag.FlagSet, jsonUsage string) *reportFlags {
	return &reportFlags{
		timeout:   fs.Duration("timeout", 5*time.Second, "bound on the statements run on each node once connected"),
		connFlags: addConnFlags(fs, jsonUsage),
	}
}

// args checks a report command's arguments, one CONFIG, and its flags,
// and loads CONFIG; on a problem it has said so, and code is the exit
// status.
func (f *reportFlags) args(e *env, cmd string, args []string) (cfg *rwshard.Config, code int) {
	if len(args) != 1 {
		return nil, e.usageError("want one CONFIG or DSN, got %d arguments", len(args))
	}
	if *f.timeout <= 0 {
		return nil, e.usageError("-timeout must be > 0")
	}
	cfg, err := f.config(args[0])
	if err != nil {
		e.errorf("%s: %s", cmd, errText(nil, err))
		return nil, exitProblem
	}
	return cfg, exitOK
}

// loadConfig reads CONFIG: a file whose first line that is neither blank
// nor a # comment is a DSN, or the DSN itself. It returns the parsed
// Config; errors never contain the password.
func loadConfig(arg string) (*rwshard.Config, error) {
	dsn, err := readDSN(arg)
	if err != nil {
		return nil, err
	}
	return rwshard.ParseDSN(dsn)
}

// readDSN returns the DSN that arg is or holds. Its errors name arg
// without what could be a password: arg may be a DSN mistyped.
func readDSN(arg string) (string, error) {
	st, err := os.Stat(arg)
	switch {
	case err == nil && st.Mode().IsRegular():
		return dsnFromFile(arg)
	case err == nil:
		return "", fmt.Errorf("config %s: not a regular file", arg)
	case strings.Contains(arg, "(") || strings.Contains(arg, "rwshard.rulesFile="):
		return arg, nil // a DSN: hosts as net(address), or a sharding rules file
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("config %s: no such file, and not a DSN (user:password@tcp(host:port),…/dbname)", withoutCredentials(arg))
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // its Path is arg
		}
		return "", fmt.Errorf("config %s: %w", withoutCredentials(arg), err)
	}
}

// withoutCredentials is arg with whatever precedes its last @ (a DSN's
// user:password) replaced by ***.
func withoutCredentials(arg string) string {
	if i := strings.LastIndexByte(arg, '@'); i >= 0 {
		return "***" + arg[i:]
	}
	return arg
}

// dsnFromFile returns the first line of the file that is neither blank nor
// a # comment.
func dsnFromFile(path string) (string, error) {
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		// A sharding rules file (rwshard's or ShardingSphere's YAML).
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", fmt.Errorf("config: %w", err)
		}
		return "/?rwshard.rulesFile=" + url.QueryEscape(abs), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.Contains(line, "(") && strings.HasSuffix(strings.Fields(line)[0], ":") {
			return "", fmt.Errorf("config %s: looks like YAML; name YAML rules files .yaml or .yml", path)
		}
		return line, nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("config %s: %w", path, err)
	}
	return "", fmt.Errorf("config %s: no DSN in the file (every line is blank or a # comment)", path)
}

// redactedDSN is cfg's DSN with the password replaced by ***.
func redactedDSN(cfg *rwshard.Config) string {
	c := cfg.Clone()
	if c.Backend != nil && c.Backend.Passwd != "" {
		c.Backend.Passwd = "***"
	}
	return c.FormatDSN()
}

// scrub removes the password from text that came from elsewhere (server
// and driver errors), in case it ever contains it. rwshard's and
// go-sql-driver's errors do not; this is a second line of defence. Very
// short passwords are not scrubbed: replacing every "a" would garble the
// text, and such a password is the bigger problem.
func scrub(cfg *rwshard.Config, s string) string {
	if cfg == nil || cfg.Backend == nil || len(cfg.Backend.Passwd) < 4 {
		return s
	}
	return strings.ReplaceAll(s, cfg.Backend.Passwd, "***")
}

// errText is err's message for the user: without rwshard's own "rwshard: "
// prefix (the CLI prints its own) and with the password scrubbed.
func errText(cfg *rwshard.Config, err error) string {
	return scrub(cfg, strings.TrimPrefix(err.Error(), "rwshard: "))
}
