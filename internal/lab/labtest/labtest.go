// Package labtest gives test packages a real MariaDB replication lab.
//
// Integration tests call Shared.Get (a lab started on first use and stopped
// by the package's TestMain, see Main) or Fresh (a private lab for tests
// that inject destructive faults; Detached and RunFresh build on it). When
// mariadbd is not installed they are skipped with a message, unless
// RWSHARD_LAB=require is set, as `make test` and CI do: then a lab that
// cannot start fails the test. go test -short skips them all.
package labtest

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// Required reports whether integration tests must run (RWSHARD_LAB=require).
func Required() bool { return os.Getenv("RWSHARD_LAB") == "require" }

const skipMsg = "integration test needs MariaDB: run `make test` (installs mariadb-server as root and starts the lab)"

// Shared is a lab shared by the tests of one package.
type Shared struct {
	opts lab.Options
	once sync.Once
	lab  *lab.Lab
	err  error
}

// NewShared describes a lab started on the first Get.
func NewShared(o lab.Options) *Shared { return &Shared{opts: o} }

// Get returns the running lab, starting it on first use.
func (s *Shared) Get(t testing.TB) *lab.Lab {
	t.Helper()
	skipShort(t)
	s.once.Do(func() { s.lab, s.err = start(s.opts) })
	check(t, s.err)
	return s.lab
}

// Stop stops the lab if it was started; call it from TestMain after m.Run.
func (s *Shared) Stop() {
	if s.lab != nil {
		_ = s.lab.Stop()
	}
}

// Main is a package's TestMain: it runs the tests, stops the shared labs
// and exits with the tests' status.
func Main(m *testing.M, labs ...*Shared) {
	code := m.Run()
	for _, s := range labs {
		s.Stop()
	}
	os.Exit(code)
}

// Fresh starts a private lab, stopped when the test ends.
func Fresh(t testing.TB, o lab.Options) *lab.Lab {
	t.Helper()
	skipShort(t)
	l, err := start(o)
	check(t, err)
	t.Cleanup(func() { _ = l.Stop() })
	return l
}

// Detached starts a Fresh detached lab (as `rwshard lab up` does) of one
// group with the given number of replicas, under a parent directory of its
// own, and returns the lab and that directory.
func Detached(t testing.TB, replicas int) (l *lab.Lab, parent string) {
	t.Helper()
	parent = t.TempDir()
	return Fresh(t, lab.Options{Shards: 1, Replicas: replicas, Detach: true, Dir: parent}), parent
}

// RunFresh calls run (an example's run function) on a Fresh lab of o, with
// a context that ends with the test or after d, and returns the lab and
// what run wrote. If run fails, so does the test, showing the output.
func RunFresh(t testing.TB, o lab.Options, d time.Duration, run func(context.Context, io.Writer, *lab.Lab) error) (*lab.Lab, string) {
	t.Helper()
	l := Fresh(t, o)
	var out strings.Builder
	if err := run(Ctx(t, d), &out, l); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return l, out.String()
}

func start(o lab.Options) (*lab.Lab, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return lab.Start(ctx, o)
}

// skipShort skips an integration test under go test -short, which runs
// only the tests that need no lab.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: -short runs only the tests that need no lab")
	}
}

func check(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case (errors.Is(err, lab.ErrNoMariaDB) || errors.Is(err, lab.ErrNoGalera)) && !Required():
		t.Skip(skipMsg)
	default:
		t.Fatalf("lab: %v", err)
	}
}

// Ctx returns a context that ends with the test or after d.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
