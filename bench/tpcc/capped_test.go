//go:build tpcc

package tpcc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// capPeriod is the CFS period of the capped placement: short, so that a
// server over its quota waits a few milliseconds, not a tenth of a second.
const capPeriod = 10 * time.Millisecond

// capNeeds is what a capped run needs, and the way to run without it.
const capNeeds = "the capped placement needs a writable cgroup CPU controller (run as root, or leave it out: -read.placement shared,pinned, with no target judged)"

// capServers emulates servers on machines of their own by giving each the
// same CPU time: a CPU controller group per server (cgroup v2 cpu.max,
// or v1 cpu.cfs_quota_us) with a quota of cpus CPUs. Unlike pinServers it
// gives neither side's client a core of its own: every server runs at the
// same speed whatever runs beside it, and the client takes what the
// servers leave, on both sides. The servers go back to their own groups
// and the groups are removed when the test ends.
func capServers(t *testing.T, l *lab.Lab, cpus float64) {
	t.Helper()
	if cpus <= 0 {
		t.Fatalf("-read.cap %v: a server needs more than 0 CPUs", cpus)
	}
	root, v2, err := cpuCgroupRoot()
	if err != nil {
		t.Fatalf("%s: %v", capNeeds, err)
	}
	quota := time.Duration(cpus * float64(capPeriod))
	for _, n := range l.Nodes() {
		pid := serverPID(t, n)
		from, err := ownCgroup(pid, v2)
		if err != nil {
			t.Fatalf("%s (pid %s): %v", n.Name, pid, err)
		}
		dir := filepath.Join(root, fmt.Sprintf("rwshard-bench-%d-%s", os.Getpid(), n.Name))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("%s: %s: %v", n.Name, capNeeds, err)
		}
		t.Cleanup(func() {
			if st, err := os.ReadFile(filepath.Join(dir, "cpu.stat")); err == nil {
				t.Logf("%s capped: cpu.stat %s", n.Name, strings.Join(strings.Fields(string(st)), " "))
			}
			if err := os.WriteFile(filepath.Join(root, from, "cgroup.procs"), []byte(pid), 0); err != nil {
				t.Logf("%s: back to its group: %v", n.Name, err)
			}
			if err := os.Remove(dir); err != nil {
				t.Logf("%s: %v", n.Name, err)
			}
		})
		for _, lim := range cpuLimits(quota, capPeriod, v2) {
			if err := os.WriteFile(filepath.Join(dir, lim[0]), []byte(lim[1]), 0); err != nil {
				t.Fatalf("%s: %s %s: %v", n.Name, lim[0], lim[1], err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pid), 0); err != nil {
			t.Fatalf("%s (pid %s): %v", n.Name, pid, err)
		}
		t.Logf("%s (pid %s) capped at %.2f CPU (%s of every %s)", n.Name, pid, cpus, quota, capPeriod)
	}
}

// cpuCgroupRoot finds the mount of the cgroup CPU controller
// (cpuControllerMount on this process's mounts).
func cpuCgroupRoot() (root string, v2 bool, err error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	return cpuControllerMount(string(mi), func(mount string) string {
		ctl, _ := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control"))
		return string(ctl)
	})
}

// ownCgroup is the group pid is in now in the CPU hierarchy, relative to
// its root (/proc/<pid>/cgroup).
func ownCgroup(pid string, v2 bool) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		return "", err
	}
	if g, ok := cgroupOf(string(b), v2); ok {
		return g, nil
	}
	return "", fmt.Errorf("no CPU controller group in /proc/%s/cgroup", pid)
}
