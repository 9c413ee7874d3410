package main

import (
	"bytes"
	"database/sql"
	"flag"
	"fmt"
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
		{nil, exitUsage, "usage: rwshard COMMAND"},
		{[]string{"help"}, exitOK, "sharding rules file"},
		{[]string{"-h"}, exitOK, "usage: rwshard COMMAND"},
		{[]string{"help", "check"}, exitOK, "usage: rwshard check"},
		{[]string{"help", "nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"check", "-h"}, exitOK, "-timeout"},
		{[]string{"lag", "-h"}, exitOK, "-interval"},
		{[]string{"lab", "up", "-h"}, exitOK, "-topology"},
		{[]string{"lab", "-h"}, exitOK, "lab status"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"check"}, exitUsage, "want one CONFIG"},
		{[]string{"check", "a(b)/c", "d"}, exitUsage, "got 2 arguments"},
		{[]string{"check", "-bogus", "x"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"check", "a(b)/c", "-timeout", "0s"}, exitUsage, "-timeout must be > 0"},
		{[]string{"explain", "a(b)/c"}, exitUsage, "want CONFIG and SQL"},
		{[]string{"lag", "a(b)/c", "-count", "-1"}, exitUsage, "-count >= 0"},
		{[]string{"lag", "a(b)/c", "-interval", "0s"}, exitUsage, "-interval must be > 0"},
		{[]string{"lab"}, exitUsage, "want a subcommand"},
		{[]string{"lab", "sideways"}, exitUsage, `unknown subcommand "sideways"`},
		{[]string{"lab", "up", "-topology", "star"}, exitUsage, `-topology "star"`},
		{[]string{"lab", "status", "extra"}, exitUsage, "unexpected arguments"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, tc.args...)
			assert.Equal(t, tc.code, r.code)
			if tc.code == exitOK {
				assert.Contains(t, r.stdout, tc.out)
			} else {
				assert.Contains(t, r.stderr, tc.out)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		interspersed bool
		pos          []string
		count        int
	}{
		{[]string{"cfg", "-count", "3"}, true, []string{"cfg"}, 3},
		{[]string{"-count", "3", "cfg"}, true, []string{"cfg"}, 3},
		{[]string{"a", "-count=2", "b"}, true, []string{"a", "b"}, 2},
		{[]string{"a", "--", "-count", "5"}, true, []string{"a", "-count", "5"}, 0},
		{[]string{"-count", "1", "cfg", "SELECT ?", "-5"}, false, []string{"cfg", "SELECT ?", "-5"}, 1},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		count := fs.Int("count", 0, "")
		pos, err := parseArgs(fs, tc.args, tc.interspersed)
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.pos, pos, tc.args)
		assert.Equal(t, tc.count, *count, tc.args)
	}
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
