package main

import (
	"bytes"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// rwLab is the primary + 2 replicas lab shared by this package's tests;
// tests that break it restore it in t.Cleanup.
var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

// result is the outcome of one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs the rwshard command line in-process.
func cli(t testing.TB, args ...string) result {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(args, &out, &errs)
	r := result{code: code, stdout: out.String(), stderr: errs.String()}
	t.Logf("rwshard %s\n%s", strings.Join(args, " "), r)
	return r
}

// hostsDSN is an rwshard DSN over addrs, primary first, as the lab's
// application user with the given password.
func hostsDSN(password string, addrs []string, params string) string {
	hosts := make([]string, len(addrs))
	for i, a := range addrs {
		hosts[i] = "tcp(" + a + ")"
	}
	dsn := fmt.Sprintf("%s:%s@%s/%s", lab.AppUser, password, strings.Join(hosts, ","), lab.AppDatabase)
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

// labDSN is an rwshard DSN over every node of l's first group.
func labDSN(l *lab.Lab, params string) string {
	return hostsDSN(lab.AppPassword, labAddrs(l), params)
}

func labAddrs(l *lab.Lab) []string {
	addrs := []string{l.Primary().Addr()}
	for _, r := range l.Replicas() {
		addrs = append(addrs, r.Addr())
	}
	return addrs
}

// waitReplicating waits until both replication threads of n run.
func waitReplicating(t testing.TB, n *lab.Node) {
	t.Helper()
	require.Eventually(t, func() bool {
		rows, err := n.Admin().Query("SHOW SLAVE STATUS")
		if err != nil {
			return false
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		if !rows.Next() {
			return false
		}
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if rows.Scan(ptrs...) != nil {
			return false
		}
		running := 0
		for i, c := range cols {
			if (c == "Slave_IO_Running" || c == "Slave_SQL_Running") && vals[i].String == "Yes" {
				running++
			}
		}
		return running == 2
	}, 30*time.Second, 50*time.Millisecond, "%s does not replicate again", n.Name)
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout for code 0, else in stderr
	}{
		{[]string{"help"}, exitOK, "sharding rules file"},
		{[]string{"help"}, exitOK, "RWSHARD_PASSWORD"},
		{[]string{"-h"}, exitOK, "usage: rwshard COMMAND"},
		{[]string{"help", "check"}, exitOK, "usage: rwshard check [flags] CONFIG|DSN"},
		{[]string{"help", "check"}, exitOK, "-defaults-file"},
		{[]string{"help", "explain"}, exitOK, "-json"},
		{[]string{"help", "lag"}, exitOK, "NDJSON"},
		{[]string{"help", "version"}, exitOK, "usage: rwshard version"},
		{[]string{"help", "lab", "up"}, exitOK, "-topology"},
		{[]string{"check", "-h"}, exitOK, "-timeout"},
		{[]string{"lag", "-h"}, exitOK, "-interval"},
		{[]string{"explain", "a(b)/c", "--help"}, exitOK, "usage: rwshard explain"},
		{[]string{"lab", "up", "-h"}, exitOK, "-topology"},
		{[]string{"lab", "-h"}, exitOK, "lab status"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, tc.args...)
			assert.Equal(t, tc.code, r.code)
			assert.Contains(t, r.stdout, tc.out)
			assert.Empty(t, r.stderr)
		})
	}
}

// A usage error is short: at most three lines on stderr, the message
// first, and exit status 2.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		first string // the first line
		lines int    // how many lines
	}{
		{nil, "usage: rwshard COMMAND [flags] [arguments]", 3},
		{[]string{"frobnicate"}, `rwshard: unknown command "frobnicate"; commands: check, explain, fleet, lag, lab, version, help`, 1},
		{[]string{"help", "nope"}, `rwshard: help: unknown command "nope"; commands: check, explain, fleet, lag, lab, version, help`, 1},
		{[]string{"help", "lab", "sideways"}, `rwshard: help: lab has no subcommand "sideways"`, 1},
		{[]string{"check"}, "rwshard: check: want one CONFIG or DSN, got 0 arguments", 3},
		{[]string{"check", "a(b)/c", "d"}, "rwshard: check: want one CONFIG or DSN, got 2 arguments", 3},
		{[]string{"check", "-bogus", "x"}, "rwshard: check: flag provided but not defined: -bogus", 3},
		{[]string{"check", "x", "--bogus"}, "rwshard: check: flag provided but not defined: -bogus", 3},
		{[]string{"check", "a(b)/c", "-timeout", "0s"}, "rwshard: check: -timeout must be > 0", 3},
		{[]string{"check", "a(b)/c", "-timeout", "soon"}, `rwshard: check: invalid value "soon" for flag -timeout: parse error`, 3},
		{[]string{"check", "a(b)/c", "-timeout"}, "rwshard: check: flag needs an argument: -timeout", 3},
		{[]string{"explain", "a(b)/c"}, "rwshard: explain: want CONFIG and SQL, got 1 argument", 3},
		{[]string{"explain", "a(b)/c", "SELECT ?"}, "rwshard: explain: SQL has 1 placeholder, got 0 arguments", 3},
		{[]string{"explain", "a(b)/c", "SELECT ? + ?", "-5"}, "rwshard: explain: SQL has 2 placeholders, got 1 argument", 3},
		{[]string{"explain", "a(b)/c", "SELECT '?'", "1"}, "rwshard: explain: SQL has 0 placeholders, got 1 argument", 3},
		{[]string{"explain", "a(b)/c", "SELECT ?", "-x"}, "rwshard: explain: flag provided but not defined: -x", 3},
		{[]string{"lag", "a(b)/c", "-count", "-1"}, "rwshard: lag: -interval must be > 0 and -count >= 0", 3},
		{[]string{"lag", "a(b)/c", "-interval", "0s"}, "rwshard: lag: -interval must be > 0 and -count >= 0", 3},
		{[]string{"version", "extra"}, "rwshard: version: takes no arguments, got 1", 3},
		{[]string{"check", "-timeout", "app:Pw-In-Flag-1@tcp(10.0.0.1:3306)/app", "x"}, "rwshard: check: invalid value for flag -timeout: parse error", 3},
		{[]string{"lab"}, "rwshard: lab: want a subcommand: up, status, down or fault", 3},
		{[]string{"lab", "sideways"}, `rwshard: lab: unknown subcommand "sideways": want up, status, down or fault`, 3},
		{[]string{"lab", "up", "-topology", "star"}, `rwshard: lab up: -topology "star": want rw, sharded or galera`, 3},
		{[]string{"lab", "status", "extra"}, `rwshard: lab status: unexpected arguments ["extra"]`, 3},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			assert.Len(t, lines, tc.lines, "stderr:\n%s", r.stderr)
			assert.LessOrEqual(t, len(lines), 3)
			assert.Equal(t, tc.first, lines[0])
			assert.NotContains(t, r.stderr, "Flags:", "the full usage")
			if tc.lines == 3 && len(tc.args) > 0 {
				name := tc.args[0]
				if name == "lab" && len(tc.args) > 1 && tc.args[1] != "sideways" {
					name += " " + tc.args[1]
				}
				assert.True(t, strings.HasPrefix(lines[1], "usage: rwshard "+name+" "), lines[1])
				assert.Equal(t, "run 'rwshard help "+name+"' for details", lines[2])
			}
		})
	}
	// The synopsis as documented.
	r := cli(t, "explain")
	assert.Contains(t, r.stderr, "\nusage: rwshard explain [flags] CONFIG SQL [ARG...]\n")
	// Where the details are, they are.
	for _, name := range []string{"check", "explain", "fleet", "lag", "lab", "lab up", "lab status", "lab down", "version"} {
		r := cli(t, append([]string{"help"}, strings.Fields(name)...)...)
		assert.Equal(t, exitOK, r.code, name)
		assert.True(t, strings.HasPrefix(r.stdout, "usage: rwshard "+name+" "), r.stdout)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		interspersed bool
		pos          []string
		count        int
		json         bool
	}{
		{[]string{"cfg", "-count", "3"}, true, []string{"cfg"}, 3, false},
		{[]string{"-count", "3", "cfg"}, true, []string{"cfg"}, 3, false},
		{[]string{"a", "-count=2", "b"}, true, []string{"a", "b"}, 2, false},
		{[]string{"a", "--", "-count", "5"}, true, []string{"a", "-count", "5"}, 0, false},
		{[]string{"--count", "4", "a", "--json"}, true, []string{"a"}, 4, true},
		{[]string{"-json", "a", "-json=false"}, true, []string{"a"}, 0, false},
		// A flag's value is the next argument, whatever it looks like.
		{[]string{"-count", "-1", "a"}, true, []string{"a"}, -1, false},
		// Numbers are positional, anywhere.
		{[]string{"cfg", "SELECT ?, ?", "-5", "-json", "-1.5"}, true, []string{"cfg", "SELECT ?, ?", "-5", "-1.5"}, 0, true},
		{[]string{"-5", "-json", "-1e3", "-.5", "-"}, true, []string{"-5", "-1e3", "-.5", "-"}, 0, true},
		{[]string{"cfg", "-json", "--", "-json", "-x"}, true, []string{"cfg", "-json", "-x"}, 0, true},
		// Not interspersed: the first positional argument ends the flags.
		{[]string{"-count", "1", "up", "-count", "3"}, false, []string{"up", "-count", "3"}, 1, false},
		{[]string{"-count", "1", "-5", "-count", "3"}, false, []string{"-5", "-count", "3"}, 1, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		count := fs.Int("count", 0, "")
		asJSON := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, tc.args, tc.interspersed)
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.pos, pos, tc.args)
		assert.Equal(t, tc.count, *count, tc.args)
		assert.Equal(t, tc.json, *asJSON, tc.args)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"a", "-nope"}, "flag provided but not defined: -nope"},
		{[]string{"a", "-count"}, "flag needs an argument: -count"},
		{[]string{"a", "-count", "x"}, `invalid value "x" for flag -count`},
		{[]string{"a", "---count", "1"}, "bad flag syntax: ---count"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("count", 0, "")
		_, err := parseArgs(fs, tc.args, true)
		assert.ErrorContains(t, err, tc.err, tc.args)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := parseArgs(fs, []string{"a", "-h"}, true)
	assert.ErrorIs(t, err, flag.ErrHelp)
}

func TestReadDSN(t *testing.T) {
	dir := t.TempDir()
	const dsn = "app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?rwshard.maxReplicaLag=1s"
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}

	got, err := readDSN(dsn)
	require.NoError(t, err)
	assert.Equal(t, dsn, got)

	got, err = readDSN(write("prod.conf", "# the shop cluster\n\n   # primary first\n  "+dsn+"  \n# trailing\n"))
	require.NoError(t, err)
	assert.Equal(t, dsn, got)

	got, err = readDSN(write("rules.yaml", "dataSources:\n  ds_0: {}\n"))
	require.NoError(t, err)
	assert.Equal(t, "/?rwshard.rulesFile="+url.QueryEscape(filepath.Join(dir, "rules.yaml")), got, "a YAML file is a sharding rules file")
	_, err = readDSN(write("rules.conf", "# ShardingSphere\ndataSources:\n"))
	assert.ErrorContains(t, err, "name YAML rules files .yaml")
	_, err = readDSN(write("empty.conf", "# nothing\n\n"))
	assert.ErrorContains(t, err, "no DSN in the file")
	_, err = readDSN(filepath.Join(dir, "missing.conf"))
	assert.ErrorContains(t, err, "no such file, and not a DSN")
	_, err = readDSN(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestRedaction(t *testing.T) {
	cfg, err := loadConfig("app:s3cr3t-pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?parseTime=true&rwshard.maxReplicaLag=1s")
	require.NoError(t, err)
	red := redactedDSN(cfg)
	assert.NotContains(t, red, "s3cr3t-pw")
	assert.Contains(t, red, "app:***@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?")
	assert.Contains(t, red, "rwshard.maxReplicaLag=1s")
	assert.Equal(t, "s3cr3t-pw", cfg.Backend.Passwd, "redaction changed the config")
	assert.Equal(t, "dial: *** rejected", scrub(cfg, "dial: s3cr3t-pw rejected"))
	assert.Equal(t, "config x: bad", errText(cfg, fmt.Errorf("rwshard: config x: bad")))
}

func TestExplainArgs(t *testing.T) {
	assert.Equal(t, []any{int64(42), int64(-7), "abc", "1.5", ""}, explainArgs([]string{"42", "-7", "abc", "1.5", ""}))
}

// slowProbes gives rwshard's health probes room on a loaded test machine:
// explain and lag show what the probes saw, and a probe that times out
// marks its node down.
const slowProbes = "rwshard.probeTimeout=5s"

// No command prints a password, whatever its argument: a DSN mistyped as
// a path, one that does not parse, one with a bad parameter, one whose
// hosts do not answer. Before, check echoed an argument that was neither
// a file nor a DSN, password and all.
func TestNoCommandPrintsThePassword(t *testing.T) {
	const pw = "Xyzzy-S3cret-42"
	dsns := []string{
		"app:" + pw + "@127.0.0.1:19617/app",
		"app:" + pw + "@tcp(127.0.0.1:1)/app?rwshard.writePause=0&rwshard.connectTimeout=200ms",
		"app:" + pw + "@tcp(127.0.0.1:1)/app?rwshard.bogus=1",
		"app:" + pw + "@tcp(127.0.0.1:1)/app?rwshard.maxReplicaLag=soon",
		"app:" + pw + "@tcp(127.0.0.1:1/app",
		"app:" + pw + "@unix(/nonexistent/sock)/app?rwshard.writePause=0",
		"app:" + pw + "@tcp(127.0.0.1:1),tcp(127.0.0.1:2)/app?rwshard.weights=x:1",
	}
	for _, dsn := range dsns {
		for _, args := range [][]string{
			{"check", "-timeout", "1s", dsn},
			{"check", "-json", "-timeout", "1s", dsn},
			{"explain", dsn, "SELECT 1"},
			{"explain", "-json", dsn, "SELECT ?", "1"},
			{"lag", "-count", "1", "-interval", "100ms", dsn},
			{"fleet", "-timeout", "1s", dsn},
			{"fleet", "-json", "-timeout", "1s", dsn},
			{"check", dsn, "extra"},
			{"fleet", dsn, "extra"},
		} {
			r := cli(t, args...)
			out := r.stdout + r.stderr
			assert.NotContains(t, out, pw, "%q printed the password:\n%s", args, out)
		}
	}
}
