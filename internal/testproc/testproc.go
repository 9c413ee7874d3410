// Package testproc runs a test again in fresh processes of its own test
// binary, for what only a process's first moments show: package state
// that nothing has touched yet (a flag set by the first use of an API).
package testproc

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// envKey carries the variant a child process runs.
const envKey = "RWSHARD_TESTPROC_VARIANT"

// Variant is the variant this process was started for by Each; "" in
// the parent (an ordinary test run).
func Variant() string { return os.Getenv(envKey) }

// Each runs t's test binary again once per variant, each running only
// t's test with Variant() returning that variant, and fails t for every
// child that fails, or that did not run the test (a pattern matching
// nothing passes silently), with the child's output.
func Each(t *testing.T, variants ...string) {
	t.Helper()
	for _, v := range variants {
		cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envKey+"="+v)
		out, err := cmd.CombinedOutput()
		switch {
		case err != nil:
			t.Errorf("variant %s in a fresh process: %v\n%s", v, err, out)
		case !strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
			t.Errorf("variant %s in a fresh process: %s did not run\n%s", v, t.Name(), out)
		}
	}
}

// Command returns, unstarted, a process of t's test binary that runs only
// t's test with Variant() returning variant: for a test that needs
// several processes running at once (Each runs one after another). The
// caller starts it, and waits for it or kills it.
func Command(t *testing.T, variant string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envKey+"="+variant)
	return cmd
}
