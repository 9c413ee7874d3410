package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
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
