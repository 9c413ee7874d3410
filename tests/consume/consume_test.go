// Package consume proves that the repository's modules can be used the way
// a user meets them: from a module proxy, at one version, with nothing of
// the repository on disk. It runs scripts/release on a copy of the tree,
// serves the published modules (the driver, shard, metrics, otel, the
// CLI) from a file-based proxy at the version it tagged, and then, in a
// fresh module outside the repository, runs go get of the four libraries,
// builds and runs a program against the lab, and go install's the CLI.
package consume

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

// version is the version the test serves every module at.
const version = "v0.0.1-consume"

// published are the modules a user can require, by directory.
var published = map[string]string{
	".":           "github.com/rwshard/rwshard",
	"shard":       "github.com/rwshard/rwshard/shard",
	"metrics":     "github.com/rwshard/rwshard/metrics",
	"otel":        "github.com/rwshard/rwshard/otel",
	"cmd/rwshard": "github.com/rwshard/rwshard/cmd/rwshard",
}

// program is the user's: it imports every library module and reads
// through rwshard on the lab.
const program = `package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/metrics"
	rwotel "github.com/rwshard/rwshard/otel"
	_ "github.com/rwshard/rwshard/shard"
)

func main() {
	db, err := sql.Open("rwshard", os.Getenv("APP_DSN"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	prometheus.NewRegistry().MustRegister(metrics.NewCollector(c))
	_ = rwotel.NewTracer()
	var id int
	if err := db.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("read on server", id)
}
`

func TestConsumeFromModuleProxy(t *testing.T) {
	l := rwLab.Get(t)
	root := repoRoot(t)
	work := t.TempDir()
	src := filepath.Join(work, "src")
	copyTracked(t, root, src)
	// The release script sets the versions, in a repository of the copy's
	// own, as it does for a real release.
	git := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	run(t, src, git, "git", "init", "-q")
	run(t, src, git, "git", "add", "-A")
	run(t, src, git, "git", "commit", "-q", "-m", "copy")
	run(t, src, git, "sh", "scripts/release", version)
	tags := run(t, src, nil, "git", "tag")
	for dir := range published {
		tag := version
		if dir != "." {
			tag = dir + "/" + version
		}
		if !strings.Contains("\n"+tags, "\n"+tag+"\n") {
			t.Errorf("the release script did not tag %s; tags:\n%s", tag, tags)
		}
	}
	proxy := filepath.Join(work, "proxy")
	for dir, path := range published {
		serve(t, proxy, filepath.Join(src, dir), path)
	}

	// The third-party modules come from this machine's module cache where
	// it has them (it is laid out as a proxy), else from the real proxy;
	// rwshard's from the test proxy only, and no checksum database knows
	// them. The checksums of the others are the repository's own go.sum
	// lines, so nothing needs the checksum database.
	cache := strings.TrimSpace(run(t, root, nil, "go", "env", "GOMODCACHE"))
	env := []string{
		"GOWORK=off",
		"GOFLAGS=-modcacherw",
		"GOMODCACHE=" + filepath.Join(work, "modcache"),
		"GOPROXY=file://" + proxy + ",file://" + filepath.Join(cache, "cache", "download") + ",https://proxy.golang.org",
		"GONOSUMDB=github.com/rwshard",
		"GOBIN=" + filepath.Join(work, "bin"),
	}
	app := filepath.Join(work, "app")
	must(t, os.MkdirAll(app, 0o755))
	must(t, os.WriteFile(filepath.Join(app, "main.go"), []byte(program), 0o644))
	must(t, os.WriteFile(filepath.Join(app, "go.mod"), []byte("module example.com/app\n\ngo 1.26.8\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(app, "go.sum"), repoSums(t, root), 0o644))
	var gets []string
	for _, path := range published {
		if !strings.HasSuffix(path, "/cmd/rwshard") {
			gets = append(gets, path+"@"+version)
		}
	}
	run(t, app, env, "go", append([]string{"get"}, gets...)...)
	run(t, app, env, "go", "mod", "tidy")
	run(t, app, env, "go", "build", "-o", "app", ".")
	out := run(t, app, []string{"APP_DSN=" + labtest.PlainDSN(l, "")}, filepath.Join(app, "app"))
	if !strings.HasPrefix(out, "read on server ") {
		t.Fatalf("the program: %s", out)
	}

	run(t, app, env, "go", "install", "github.com/rwshard/rwshard/cmd/rwshard@"+version)
	out = run(t, app, nil, filepath.Join(work, "bin", "rwshard"), "version")
	if !strings.Contains(out, "rwshard") {
		t.Fatalf("rwshard version: %s", out)
	}
}

// repoRoot is the directory of the repository's go.work.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	must(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test")
		}
		dir = parent
	}
}

// copyTracked copies the files git tracks under root, as they are on
// disk, to dst: what a release would publish, with this tree's changes.
func copyTracked(t *testing.T, root, dst string) {
	for _, f := range strings.Split(strings.TrimSpace(run(t, root, nil, "git", "ls-files")), "\n") {
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		must(t, err)
		to := filepath.Join(dst, f)
		must(t, os.MkdirAll(filepath.Dir(to), 0o755))
		must(t, os.WriteFile(to, b, 0o644))
	}
}

// serve puts the module in dir into proxy at version. Its go.mod must be
// what a user's build can use: no replace directives (a user's build
// ignores them), the repository's modules required at version.
func serve(t *testing.T, proxy, dir, path string) {
	gomod := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(gomod)
	must(t, err)
	f, err := modfile.Parse(gomod, b, nil)
	must(t, err)
	if len(f.Replace) > 0 {
		t.Errorf("%s: a published go.mod has replace directives", gomod)
	}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, "github.com/rwshard/rwshard") && r.Mod.Version != version {
			t.Errorf("%s requires %s at %s after the release script, not %s", gomod, r.Mod.Path, r.Mod.Version, version)
		}
	}

	esc, err := module.EscapePath(path)
	must(t, err)
	at := filepath.Join(proxy, esc, "@v")
	must(t, os.MkdirAll(at, 0o755))
	must(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
	info, err := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC()})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(at, version+".info"), info, 0o644))
	must(t, os.WriteFile(filepath.Join(at, version+".mod"), b, 0o644))
	var z bytes.Buffer
	must(t, modzip.CreateFromDir(&z, module.Version{Path: path, Version: version}, dir))
	checkZip(t, z.Bytes(), path)
	must(t, os.WriteFile(filepath.Join(at, version+".zip"), z.Bytes(), 0o644))
}

// checkZip fails on a module zip that carries another module's files or
// the lab's state: what CreateFromDir leaves out, it must.
func checkZip(t *testing.T, b []byte, path string) {
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	must(t, err)
	for _, f := range r.File {
		name := strings.TrimPrefix(f.Name, path+"@"+version+"/")
		if strings.Count(name, "go.mod") > 0 && name != "go.mod" {
			t.Errorf("%s's zip holds %s", path, name)
		}
	}
}

// repoSums is every go.sum line of the repository's modules.
func repoSums(t *testing.T, root string) []byte {
	seen := map[string]bool{}
	var out bytes.Buffer
	for dir := range published {
		b, err := os.ReadFile(filepath.Join(root, dir, "go.sum"))
		if os.IsNotExist(err) {
			continue
		}
		must(t, err)
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if line != "" && !seen[line] {
				seen[line] = true
				out.WriteString(line)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "go.work.sum"))
	if err == nil {
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if line != "" && !seen[line] {
				seen[line] = true
				out.WriteString(line)
			}
		}
	}
	return out.Bytes()
}

// run runs name in dir with env added, and returns its output; it fails
// the test with that output if the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %s", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return out.String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
