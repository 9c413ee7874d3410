package rwshard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helloMain is a program that only wants read/write splitting: it
// blank-imports the driver and defines its own -v flag, as programs do.
const helloMain = `package main

import (
	"database/sql"
	"flag"
	"fmt"

	_ "github.com/rwshard/rwshard"
)

var verbose = flag.Bool("v", false, "verbose")

func main() {
	flag.Parse()
	db, err := sql.Open("rwshard", "app:pw@tcp(127.0.0.1:1),tcp(127.0.0.1:2)/shop")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	fmt.Println("opened", *verbose)
}
`

// TestDriverFootprint builds that program in a module of its own, as a
// user would, and checks what it pays for the driver: no module linked
// but go-sql-driver's and xxhash, its own -v flag works, at most 8 MiB
// stripped, and a go.sum of those and the driver's test dependency.
func TestDriverFootprint(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	gomod := "module example.com/hello\n\ngo 1.25\n\nrequire github.com/rwshard/rwshard v0.0.0\n\nreplace github.com/rwshard/rwshard => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(helloMain), 0o644))
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	run("mod", "tidy")

	deps := run("list", "-deps", ".")
	for _, bad := range []string{"vitess.io/", "github.com/golang/glog", "google.golang.org/grpc", "google.golang.org/protobuf", "gopkg.in/yaml", "go.yaml.in/yaml", "github.com/stretchr/testify"} {
		assert.NotContains(t, deps, bad, "a driver-only program links %s", bad)
	}
	linked := map[string]bool{}
	for _, m := range strings.Fields(run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")) {
		linked[m] = true
	}
	assert.Equal(t, map[string]bool{
		"example.com/hello":              true,
		"github.com/rwshard/rwshard":     true,
		"github.com/go-sql-driver/mysql": true,
		"filippo.io/edwards25519":        true, // go-sql-driver's
		"github.com/cespare/xxhash/v2":   true,
	}, linked, "modules a driver-only program links")

	// go.sum also names the driver's test dependency (testify, and its
	// yaml): go mod tidy keeps their checksums, and nothing links them.
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(sum)), "\n") {
		m := strings.Fields(line)[0]
		assert.True(t, linked[m] || m == "github.com/stretchr/testify" || m == "go.yaml.in/yaml/v3",
			"go.sum of a driver-only program names %s:\n%s", m, sum)
	}

	bin := filepath.Join(dir, "hello")
	run("build", "-ldflags=-s -w", "-o", bin, ".")
	fi, err := os.Stat(bin)
	require.NoError(t, err)
	t.Logf("driver-only program, stripped: %.1f MiB", float64(fi.Size())/(1<<20))
	assert.LessOrEqual(t, fi.Size(), int64(8<<20), "stripped size")

	out, err := exec.Command(bin, "-v").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "opened true\n", string(out), "its own -v flag")
}
