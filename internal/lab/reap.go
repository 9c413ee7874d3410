package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Leftovers returns the pids of running mariadbd processes whose data
// directory is a lab's or the lab template's.
func Leftovers() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmd, []byte("mariadbd")) &&
			(bytes.Contains(cmd, []byte("/"+DirPrefix)) || bytes.Contains(cmd, []byte("/rwshard-template-"))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Reap kills every leftover lab server (see Leftovers) and returns how many
// it killed. Their directories are left for inspection.
func Reap() int {
	pids := Leftovers()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// LeftoversIn returns the pids among Leftovers whose data directory is
// inside dir: the servers of labs started with Options.Dir under dir. Labs
// elsewhere, such as those of tests running at the same time, are not
// included.
func LeftoversIn(dir string) []int {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	var pids []int
	for _, pid := range Leftovers() {
		cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		d := datadir(bytes.Split(cmd, []byte{0}))
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) { // relative to the server's working directory
			cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
			if err != nil {
				continue
			}
			d = filepath.Join(cwd, d)
		}
		if rel, err := filepath.Rel(dir, d); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ReapIn kills the leftover lab servers whose data directory is inside dir
// (see LeftoversIn) and returns how many it killed. Their directories are
// left for inspection.
func ReapIn(dir string) int {
	pids := LeftoversIn(dir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}
