package tpcc_test

import (
	"bufio"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The capped placement's parsing (capServers does the I/O): which mount
// holds the CPU controller, which group a process is in, what to write
// into a group. Untagged, so that `go test ./...` (CI) runs their tests,
// below, without the lab or root.

// cpuControllerMount picks the mount of the cgroup CPU controller from
// /proc/self/mountinfo's text: the v2 hierarchy if it offers cpu to its
// children (subtreeControl returns a mount's cgroup.subtree_control, ""
// when unreadable), else v1's cpu hierarchy.
func cpuControllerMount(mountinfo string, subtreeControl func(mount string) string) (root string, v2 bool, err error) {
	var v1 string
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
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
			if slices.Contains(strings.Fields(subtreeControl(mount)), "cpu") {
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

// cgroupOf is the group in the CPU hierarchy that /proc/<pid>/cgroup's
// text names, relative to the hierarchy's root.
func cgroupOf(procCgroup string, v2 bool) (string, bool) {
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" || !v2 && slices.Contains(strings.Split(parts[1], ","), "cpu") {
			return parts[2], true
		}
	}
	return "", false
}

// cpuLimits are the files and values that hold a group to quota of
// every period: v2's cpu.max, or v1's period first (the kernel checks a
// quota against the period in force).
func cpuLimits(quota, period time.Duration, v2 bool) [][2]string {
	if v2 {
		return [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota.Microseconds(), period.Microseconds())}}
	}
	return [][2]string{{"cpu.cfs_period_us", fmt.Sprint(period.Microseconds())}, {"cpu.cfs_quota_us", fmt.Sprint(quota.Microseconds())}}
}

func TestCPUControllerMount(t *testing.T) {
	const (
		rootFS  = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw"
		v2      = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate"
		unified = "36 25 0:31 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw"
		cpuset  = "29 25 0:25 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,cpuset"
		cpuV1   = "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,cpu,cpuacct"
		// The project's machine of 3 December, as read there: v1 only, a
		// tmpfs over the hierarchies, cpu apart from cpuacct, no
		// optional fields.
		machine = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
			"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
			"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct"
	)
	control := map[string]string{"/sys/fs/cgroup": "cpuset cpu io memory pids\n", "/sys/fs/cgroup/unified": "memory pids\n"}
	subtree := func(m string) string { return control[m] }
	for _, tc := range []struct {
		name, mountinfo, root string
		v2, fails             bool
	}{
		{"v2 offering cpu", strings.Join([]string{rootFS, v2}, "\n"), "/sys/fs/cgroup", true, false},
		{"hybrid: v2 without cpu, v1 cpu", strings.Join([]string{rootFS, unified, cpuset, cpuV1}, "\n"), "/sys/fs/cgroup/cpu,cpuacct", false, false},
		{"v2 before v1 cpu", strings.Join([]string{cpuV1, v2}, "\n"), "/sys/fs/cgroup", true, false},
		{"cpuset is not cpu", strings.Join([]string{rootFS, unified, cpuset}, "\n"), "", false, true},
		{"malformed lines", "x\n1 2 - cgroup2\n\n" + cpuV1, "/sys/fs/cgroup/cpu,cpuacct", false, false},
		{"none", rootFS, "", false, true},
		{"v1 cpu apart from cpuacct", machine, "/sys/fs/cgroup/cpu", false, false},
	} {
		root, isV2, err := cpuControllerMount(tc.mountinfo, subtree)
		if (err != nil) != tc.fails || root != tc.root || isV2 != tc.v2 {
			t.Errorf("%s: got %q, v2 %v, err %v; want %q, v2 %v, fails %v", tc.name, root, isV2, err, tc.root, tc.v2, tc.fails)
		}
	}
}

func TestCgroupOf(t *testing.T) {
	const hybrid = "12:cpuset:/\n4:cpu,cpuacct:/system.slice/mariadb.service\n0::/system.slice/other\n"
	for _, tc := range []struct {
		name, text string
		v2         bool
		want       string
		found      bool
	}{
		{"v2", "0::/user.slice/user-0.slice/session-1.scope\n", true, "/user.slice/user-0.slice/session-1.scope", true},
		{"v1 cpu", hybrid, false, "/system.slice/mariadb.service", true},
		{"v2 line of a hybrid", hybrid, true, "/system.slice/other", true},
		{"v1 cpuset only", "3:cpuset:/a\n0::/b", false, "", false},
		{"the machine of 3 December, v1", "4:memory:/process_api/x\n3:cpuset:/not-cpu\n2:cpuacct:/not-cpu\n1:cpu:/\n0::/", false, "/", true},
		{"a path with colons", "0::/a:b", true, "/a:b", true},
		{"empty", "", true, "", false},
	} {
		got, ok := cgroupOf(tc.text, tc.v2)
		if got != tc.want || ok != tc.found {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.found)
		}
	}
}

func TestCPULimits(t *testing.T) {
	got := cpuLimits(5*time.Millisecond, 10*time.Millisecond, true)
	if want := [][2]string{{"cpu.max", "5000 10000"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2: %v, want %v", got, want)
	}
	got = cpuLimits(2500*time.Microsecond, 10*time.Millisecond, false)
	if want := [][2]string{{"cpu.cfs_period_us", "10000"}, {"cpu.cfs_quota_us", "2500"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1: %v, want %v", got, want)
	}
}
