// Package gosqldriver runs go-sql-driver/mysql's own integration tests
// through rwshard: the suite ships in go-sql-driver's module and opens its
// connections with sql.Open(driverNameTest, …), a variable set with
// -ldflags. The test copies that module from the module cache into a
// temporary directory, adds a file that links rwshard in, points the few
// sql.Open("mysql", …) calls at driverNameTest, and runs the suite three
// times on the lab as a user scoped to its database: direct, through
// rwshard over one host, and through rwshard over the primary and two
// replicas. Every test that passes direct must pass through rwshard.
package gosqldriver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

// notRun are tests left out of every run, with the reason.
var notRun = map[string]string{
	// It dials 1.1.1.1:1234 expecting a dial timeout; this machine's
	// network answers there, and the test panics direct too.
	"TestConnectorReturnsTimeout": "environment: fails direct",
}

// notThroughRwshard are tests that type-assert go-sql-driver's unexported
// connection type (*mysql.mysqlConn) on the driver connection that
// sql.Conn.Raw hands out, which through rwshard is rwshard's.
var notThroughRwshard = map[string]string{
	"TestPing":                 "asserts *mysqlConn in Conn.Raw",
	"TestQueryMultipleResults": "asserts *mysqlConn in Conn.Raw",
}

// differentByDesign are tests whose assertion rwshard answers
// differently on purpose. go-sql-driver's dial-error tests require the
// error of a write whose dial fails to be the dial error itself (==):
// rwshard waits rwshard.writePause for a primary it cannot reach, as for
// one that went away, and then returns ErrPrimaryUnavailable in a
// RouteError naming the node, with the dial error as its cause
// (errors.Is reaches it). TestLabPrimaryDownFromStart tests that.
var differentByDesign = map[string]string{
	"TestDialUnknownError":       "dial error wrapped in ErrPrimaryUnavailable after writePause",
	"TestDialNonRetryableNetErr": "dial error wrapped in ErrPrimaryUnavailable after writePause",
	"TestDialTemporaryNetErr":    "dial error wrapped in ErrPrimaryUnavailable after writePause",
}

// notOverSeveralHosts are tests that take the suite's DSN apart with
// go-sql-driver's own ParseDSN and dial it with its connector, bypassing
// sql.Open: a DSN of three hosts is not one address to them.
var notOverSeveralHosts = map[string]string{
	"TestReuseClosedConnection": "dials the suite's DSN with mysql.NewConnector",
}

func TestGoSQLDriverSuite(t *testing.T) {
	l := rwLab.Get(t)
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := copySuite(t, goCmd)

	primary := l.Primary().Addr()
	var replicas []string
	for _, r := range l.Replicas() {
		replicas = append(replicas, "tcp("+r.Addr()+")")
	}
	skip := func(extra map[string]string) string {
		var names []string
		for n := range notRun {
			names = append(names, n)
		}
		for n := range extra {
			names = append(names, n)
		}
		slices.Sort(names)
		return "^(" + strings.Join(names, "|") + ")$"
	}
	run := func(name string, rwshard bool, hosts string) map[string]string {
		t.Helper()
		args := []string{"test", "-count=1", "-json", "-timeout=4m", "-skip", skip(nil)}
		if rwshard {
			left := maps.Clone(notThroughRwshard)
			maps.Copy(left, differentByDesign)
			if hosts != "" {
				maps.Copy(left, notOverSeveralHosts)
			}
			args = []string{"test", "-count=1", "-json", "-timeout=4m", "-skip", skip(left),
				"-ldflags=-X github.com/go-sql-driver/mysql.driverNameTest=rwshard"}
		}
		args = append(args, ".")
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod",
			"MYSQL_TEST_USER="+lab.PlainUser, "MYSQL_TEST_PASS="+lab.PlainPassword,
			"MYSQL_TEST_PROT=tcp", "MYSQL_TEST_ADDR="+primary, "MYSQL_TEST_DBNAME="+lab.AppDatabase,
			"RWSHARD_SUITE_HOSTS="+hosts)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		res := results(out.Bytes())
		counts := map[string]int{}
		for _, a := range res {
			counts[a]++
		}
		t.Logf("%s: %d passed, %d failed, %d skipped in %s (go test: %v)", name,
			counts["pass"], counts["fail"], counts["skip"], time.Since(start).Round(time.Second), err)
		if counts["pass"] == 0 {
			t.Fatalf("%s: no test passed:\n%s", name, tail(out.String(), 4000))
		}
		if strings.Contains(out.String(), "panic: ") {
			t.Errorf("%s: the suite panicked:\n%s\nits goroutines in database/sql or rwshard:\n%s",
				name, panicText(out.Bytes(), 40), stacksIn(out.Bytes(), []string{"database/sql.", "rwshard"}, 400))
		}
		if err != nil && counts["fail"] == 0 {
			t.Fatalf("%s: go test failed without a failing test (a panic or a build error):\n%s", name, tail(out.String(), 4000))
		}
		return res
	}
	direct := run("direct", false, "")
	var failDirect []string
	for test, action := range direct {
		if action == "fail" {
			failDirect = append(failDirect, test)
		}
	}
	slices.Sort(failDirect)
	t.Logf("fail direct too, as this user on this server (not compared): %s", strings.Join(failDirect, ", "))
	for _, rw := range []struct{ name, hosts string }{
		{"rwshard, one host", ""},
		{"rwshard, primary and two replicas", "," + strings.Join(replicas, ",")},
	} {
		got := run(rw.name, true, rw.hosts)
		var broken []string
		for test, action := range direct {
			if action == "pass" && got[test] != "pass" && !excluded(test, rw.hosts != "") {
				broken = append(broken, fmt.Sprintf("%s (%s)", test, orNone(got[test])))
			}
		}
		slices.Sort(broken)
		if len(broken) > 0 {
			t.Errorf("%s: %d tests pass direct and not through rwshard:\n  %s", rw.name, len(broken), strings.Join(broken, "\n  "))
		}
	}
}

func excluded(test string, severalHosts bool) bool {
	top, _, _ := strings.Cut(test, "/")
	_, ok := notThroughRwshard[top]
	_, differs := differentByDesign[top]
	_, multi := notOverSeveralHosts[top]
	return ok || differs || multi && severalHosts
}

func orNone(s string) string {
	if s == "" {
		return "did not run"
	}
	return s
}

// results reads go test -json output: test (and subtest) → pass, fail or
// skip.
func results(out []byte) map[string]string {
	res := map[string]string{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		var e struct{ Action, Test string }
		if json.Unmarshal(line, &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			res[e.Test] = e.Action
		}
	}
	return res
}

// panicText is go test's -json output as text (its events' Output)
// from the first panic on, at most n lines: a -timeout panic names the
// tests still running in its first lines, which the end of a long
// goroutine dump leaves out.
func panicText(out []byte, n int) string {
	s := outputText(out)
	i := strings.Index(s, "panic: ")
	if i < 0 {
		return ""
	}
	lines := strings.SplitN(s[i:], "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// stacksIn is the goroutines of a panic's dump whose stacks name one of
// frames, at most n lines: where a hung test waits, kept in the test's
// log (the dump itself goes with the temporary directory).
func stacksIn(out []byte, frames []string, n int) string {
	s := outputText(out)
	i := strings.Index(s, "\ngoroutine ")
	if i < 0 || !strings.Contains(s[:i], "panic: ") {
		return ""
	}
	var kept []string
	for _, g := range strings.Split(s[i+1:], "\n\n") {
		if slices.ContainsFunc(frames, func(f string) bool { return strings.Contains(g, f) }) {
			kept = append(kept, strings.Split(strings.TrimRight(g, "\n"), "\n")...)
			kept = append(kept, "")
		}
	}
	if len(kept) > n {
		kept = append(kept[:n], fmt.Sprintf("… %d lines more", len(kept)-n))
	}
	return strings.Join(kept, "\n")
}

// outputText is go test's -json output as text: its events' Output, and
// any line that is not an event as it is.
func outputText(out []byte) string {
	var b strings.Builder
	for _, line := range bytes.Split(out, []byte("\n")) {
		var e struct{ Output string }
		if json.Unmarshal(line, &e) == nil {
			b.WriteString(e.Output)
		} else if len(line) > 0 {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// copySuite copies go-sql-driver/mysql, at the version this module
// requires, into a temporary directory and prepares it to run through
// rwshard. Nothing of go-sql-driver is kept in this repository.
func copySuite(t *testing.T, goCmd string) string {
	t.Helper()
	out, err := exec.Command(goCmd, "list", "-m", "-f", "{{.Dir}}", "github.com/go-sql-driver/mysql").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	src := strings.TrimSpace(string(out))
	dir := filepath.Join(t.TempDir(), "mysql")
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(file string, edits ...[2]string) {
		t.Helper()
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, e := range edits {
			if !strings.Contains(s, e[0]) {
				t.Fatalf("%s: %q not found: go-sql-driver's suite changed, adapt this test", file, e[0])
			}
			s = strings.ReplaceAll(s, e[0], e[1])
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("driver_test.go",
		// The few tests that open "mysql" by name use the driver under test.
		[2]string{`sql.Open("mysql", `, `sql.Open(driverNameTest, `},
		// More hosts after the first, for rwshard: the suite builds its DSN
		// from one address.
		[2]string{`dsn = fmt.Sprintf("%s:%s@%s/%s?timeout=30s", user, pass, netAddr, dbname)`,
			`dsn = fmt.Sprintf("%s:%s@%s%s/%s?timeout=30s", user, pass, netAddr, os.Getenv("RWSHARD_SUITE_HOSTS"), dbname)`})
	register := "package mysql_test\n\n// Links rwshard in; -ldflags makes the suite open it.\nimport _ \"github.com/rwshard/rwshard\"\n"
	if err := os.WriteFile(filepath.Join(dir, "rwshard_register_test.go"), []byte(register), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "go.mod"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\nrequire github.com/rwshard/rwshard v0.0.0\n\nreplace github.com/rwshard/rwshard => %s\n", root)
	f.Close()
	return dir
}
