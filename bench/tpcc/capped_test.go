//go:build tpcc

package tpcc_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		limits := [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota.Microseconds(), capPeriod.Microseconds())}}
		if !v2 { // the period first: a quota is checked against it
			limits = [][2]string{{"cpu.cfs_period_us", fmt.Sprint(capPeriod.Microseconds())}, {"cpu.cfs_quota_us", fmt.Sprint(quota.Microseconds())}}
		}
		for _, lim := range limits {
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

// cpuCgroupRoot finds the mount of the cgroup CPU controller: the v2
// hierarchy if it offers cpu to its children, else v1's cpu hierarchy.
func cpuCgroupRoot() (root string, v2 bool, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	var v1 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+3 >= len(fields) || len(fields) < 5 {
			continue
		}
		mount, fstype, super := fields[4], fields[sep+1], fields[sep+3]
		switch fstype {
		case "cgroup2":
			ctl, err := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control"))
			if err == nil && slices.Contains(strings.Fields(string(ctl)), "cpu") {
				return mount, true, nil
			}
		case "cgroup":
			if slices.Contains(strings.Split(super, ","), "cpu") {
				v1 = mount
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	if v1 == "" {
		return "", false, fmt.Errorf("no cgroup v2 hierarchy with the cpu controller enabled, and no v1 cpu hierarchy, in /proc/self/mountinfo")
	}
	return v1, false, nil
}

// ownCgroup is the group pid is in now in the CPU hierarchy, relative to
// its root (/proc/<pid>/cgroup).
func ownCgroup(pid string, v2 bool) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" || !v2 && slices.Contains(strings.Split(parts[1], ","), "cpu") {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("no CPU controller group in /proc/%s/cgroup", pid)
}
