package tpcc_test

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// cpuTime is this process's user+system CPU time: the client's cost,
// which wall time (dominated by three servers on the same two cores)
// hides. Divided by the transactions of a run it is the client CPU per
// transaction: go-tpc's own work, database/sql, the driver, and for
// rwshard its routing and health probes.
func cpuTime() time.Duration {
	u, k := cpuSplit()
	return u + k
}

// cpuSplit is cpuTime's two parts: user space (go-tpc, database/sql,
// the drivers, rwshard) and the kernel (the sockets' system calls, and
// the wakeups they cause).
func cpuSplit() (user, kernel time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// syscalls is this process's read and write system calls so far and
// the bytes they read and wrote (/proc/self/io syscr + syscw, rchar,
// wchar; 0 where unreadable): the same per transaction on both sides
// means the same socket traffic. The bytes count every read and write of
// the process, the harness's own reads of /proc between two readings
// too (a few KiB a run, alike on both sides).
func syscalls() (calls, read, written int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "syscr:", "syscw:":
			calls += v
		case "rchar:":
			read += v
		case "wchar:":
			written += v
		}
	}
	return calls, read, written
}

// switches is this process's context switches so far (voluntary and
// involuntary, getrusage) and the machine's rescheduling and
// function-call interrupts (/proc/interrupts RES and CAL, every CPU; 0
// where unreadable): how often a statement's wake-ups cost a
// cross-CPU interrupt, which on a virtual machine is an exit to the
// host.
func switches() (csw, ipis int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	csw = int64(ru.Nvcsw + ru.Nivcsw)
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return csw, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "RES:" && f[0] != "CAL:" {
			continue
		}
		for _, v := range f[1:] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				break // the description
			}
			ipis += n
		}
	}
	return csw, ipis
}

// heap is this process's heap allocations so far (bytes and objects)
// and the runtime's estimate of the CPU its garbage collector has used
// (runtime/metrics): per transaction, what a side allocates and what
// collecting it costs. A slice's readings count the other side's idle
// handle too (its health probes allocate a little), as the CPU does.
func heap() (bytes, objects uint64, gc time.Duration) {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/allocs:objects"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
	}
	metrics.Read(s)
	gc = time.Duration(s[2].Value.Float64() * 1e9)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), gc
}

// loadAvg is the first three fields of /proc/loadavg, to show how busy
// the shared machine was.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// captureStdout runs f with os.Stdout sent to a pipe and returns what f
// printed. go-tpc reports with fmt.Printf; the testing package keeps its
// own reference to the real stdout, so test output is unaffected. Nothing
// else may print while f runs (it would land in the capture).
func captureStdout(f func()) string {
	var b strings.Builder
	for _, l := range captureLines(f) {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// stampedLine is a line f printed and when it arrived.
type stampedLine struct {
	at   time.Time
	text string
}

// captureLines is captureStdout line by line, each line stamped with the
// time it was printed (go-tpc's check announces each condition before
// running it: the stamps time the conditions).
func captureLines(f func()) []stampedLine {
	r, w, err := os.Pipe()
	if err != nil {
		f()
		return nil
	}
	out := make(chan []stampedLine)
	go func() {
		var lines []stampedLine
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines = append(lines, stampedLine{time.Now(), sc.Text()})
		}
		_, _ = io.Copy(io.Discard, r)
		r.Close()
		out <- lines
	}()
	saved := os.Stdout
	os.Stdout = w
	func() {
		defer func() { os.Stdout = saved }()
		f()
	}()
	w.Close()
	return <-out
}

// opStats is one transaction type of a go-tpc summary line:
//
//	[Summary] NEW_ORDER - Takes(s): 30.0, Count: 1234, TPM: 2468.0, Sum(ms): …, Avg(ms): 9.1, 50th(ms): 8.4, 90th(ms): …, 95th(ms): …, 99th(ms): 25.2, 99.9th(ms): …, Max(ms): …
type opStats struct {
	Takes    float64 // seconds from the type's first transaction to the report
	Count    int64
	TPM      float64
	Avg      float64 // milliseconds, as are the percentiles
	P50, P99 float64
}

// goTPCSummary is what tpcc.Workloader.OutputStats(true) prints: a line
// per transaction type that ran ("NEW_ORDER", "PAYMENT", …, and
// "NEW_ORDER_ERR" etc. for failed ones), then "tpmC: …".
type goTPCSummary struct {
	Ops  map[string]opStats
	TpmC float64 // go-tpc's: NEW_ORDER count over its Takes
}

// parseSummary reads go-tpc's summary. go-tpc picks each transaction's
// type inside Workloader.Run and keeps its histograms unexported; this
// printed summary is its only per-type output apart from global
// Prometheus gauges that keep stale values for types absent from a run.
func parseSummary(s string) (goTPCSummary, error) {
	sum := goTPCSummary{Ops: map[string]opStats{}}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "tpmC:"); ok {
			v, _, _ := strings.Cut(rest, ",")
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return sum, fmt.Errorf("tpmC line %q: %w", line, err)
			}
			sum.TpmC = f
			continue
		}
		rest, ok := strings.CutPrefix(line, "[Summary] ")
		if !ok {
			continue
		}
		op, fields, ok := strings.Cut(rest, " - ")
		if !ok {
			return sum, fmt.Errorf("summary line %q: no ' - '", line)
		}
		var st opStats
		seen := 0
		for _, kv := range strings.Split(fields, ", ") {
			k, v, ok := strings.Cut(kv, ": ")
			if !ok {
				return sum, fmt.Errorf("summary line %q: field %q", line, kv)
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return sum, fmt.Errorf("summary line %q: field %q: %w", line, kv, err)
			}
			switch k {
			case "Takes(s)":
				st.Takes = f
			case "Count":
				st.Count = int64(f)
			case "TPM":
				st.TPM = f
			case "Avg(ms)":
				st.Avg = f
			case "50th(ms)":
				st.P50 = f
			case "99th(ms)":
				st.P99 = f
			default:
				continue
			}
			seen++
		}
		if seen != 6 {
			return sum, fmt.Errorf("summary line %q: %d of the 6 fields used", line, seen)
		}
		sum.Ops[strings.TrimSpace(op)] = st
	}
	return sum, sc.Err()
}

// median of xs (0 for none).
// orderBalanced separates, in the ratios of interleaved pairs (rwshard
// over direct, pair p run in pairOrder(p)), the side's effect from the
// order's: the second run of a pair may cost more than the first whoever
// runs it. With log r_p = side + order·(+1 when direct ran first, −1
// when rwshard did), side is the mean of the two orders' mean log ratios
// and order their half-difference; both returned as factors (1: none).
// It needs pairs in both orders.
func orderBalanced(ratios []float64) (side, order float64, ok bool) {
	var sum [2]float64
	var n [2]int
	for p, r := range ratios {
		o := 0 // direct first (pairOrder)
		if pairOrder(p)[0] == viaRW {
			o = 1
		}
		sum[o] += math.Log(r)
		n[o]++
	}
	if n[0] == 0 || n[1] == 0 {
		return 0, 0, false
	}
	a, b := sum[0]/float64(n[0]), sum[1]/float64(n[1])
	return math.Exp((a + b) / 2), math.Exp((a - b) / 2), true
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// counterDelta is after - before, per counter.
func counterDelta(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}

// addCounters adds d into acc.
func addCounters(acc, d map[string]int64) {
	for k, v := range d {
		acc[k] += v
	}
}

// sumOf adds the named counters of m.
func sumOf(m map[string]int64, names []string) int64 {
	var s int64
	for _, k := range names {
		s += m[k]
	}
	return s
}

// formatCounters prints the non-zero counters of m in names' order.
func formatCounters(m map[string]int64, names []string) string {
	var b strings.Builder
	for _, k := range names {
		if m[k] != 0 {
			fmt.Fprintf(&b, " %s=%d", k, m[k])
		}
	}
	if b.Len() == 0 {
		return " all 0"
	}
	return b.String()
}

// count is the number of transactions in a go-tpc summary, failed ones
// (<TYPE>_ERR) included.
func (s goTPCSummary) count() int64 {
	var n int64
	for _, st := range s.Ops {
		n += st.Count
	}
	return n
}

// countsAgree reports whether go-tpc's count of a run's transactions
// (goTPC, its summary's histograms) agrees with the harness's (harness,
// its Run calls), and how many go-tpc lost. go-tpc v1.0.7 loses a
// measurement when threads make the first measurement of a histogram at
// once: Measurement.getHist looks the histogram up under the read lock
// and, on a miss, makes a new pair (the type and its _ERR) and stores it
// under the write lock, so the last store wins, and what was measured
// into the pairs stored before it lands in histograms no one reads
// (pingcap/go-tpc#183, open). That befalls only a histogram's first
// measurements, from its first store until a slower creator's; the
// window is one step between two locks, longer only if that creator is
// descheduled in it, so the bound accepted is a practical one, not a
// proof: threads-1 for each of the 2 × types histograms of a run. Any
// other difference, and go-tpc counting more, is a disagreement.
func countsAgree(harness, goTPC int64, threads, types int) (lost int64, ok bool) {
	lost = harness - goTPC
	return lost, lost >= 0 && lost <= int64(2*types*max(threads-1, 0))
}

// profiled counts the profiles written, so that each run's has its own
// name.
var profiled int

// profile starts a CPU profile of one run when -bench.cpuprofile names a
// directory, at -bench.cpuprofile.rate samples a second, and returns
// what stops it. The profile covers the whole
// process (go-tpc, database/sql, the driver, rwshard's probes): comparing
// the two sides' profiles shows where one side's CPU goes.
func profile(t testing.TB, side string) (stop func()) {
	if *cpuProfiles == "" {
		return func() {}
	}
	profiled++
	name := filepath.Join(*cpuProfiles, fmt.Sprintf("%s-%02d-%s.pprof", strings.ReplaceAll(t.Name(), "/", "_"), profiled, side))
	if err := os.MkdirAll(*cpuProfiles, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if *cpuRate != 100 {
		// Set first: StartCPUProfile's own rate (100) does not replace
		// a rate already set, and the profile's header carries this one.
		runtime.SetCPUProfileRate(*cpuRate)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		t.Fatalf("-bench.cpuprofile: %v (a process has one CPU profile: not with go test's -cpuprofile)", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// noSide is idleCost's key for the process with neither side open.
const noSide = "none"

// idleTakeOut is what to take out of side's slices of a sliced pair, of
// wall time in all. Direct's lose rwshard's open handle's background work
// (its health probes): its idle cost less the process's own, over the
// wall time (idle: CPU nanoseconds per second of wall time, see
// idleCost). The process's own is the least of the readings, that with
// neither side open and direct's among them: noise only ever adds CPU to
// a reading. rwshard's lose nothing: direct's handle does nothing by
// itself, so whatever its reading shows above the least is noise, and
// taking it out would only favour rwshard.
func idleTakeOut(idle map[string]float64, side string, wall time.Duration) time.Duration {
	if side != direct {
		return 0
	}
	base := idle[viaRW]
	for _, v := range idle {
		base = min(base, v)
	}
	return time.Duration((idle[viaRW] - base) * wall.Seconds())
}

// serverCPUKey is the key of a node's process CPU time (µs) in snapshot.
const serverCPUKey = "cpu.us"

// serverPID is the process id of the node's mariadbd, from the pid file
// it writes (the lab may have been started by another process).
func serverPID(t testing.TB, n *lab.Node) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Dir, "pid"))
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	return strings.TrimSpace(string(b))
}

// serverCPU is the user+system CPU time the node's mariadbd has used
// (/proc/<pid>/stat): with the client's, what a run cost the machine.
func serverCPU(t testing.TB, n *lab.Node) time.Duration {
	t.Helper()
	stat, err := os.ReadFile(filepath.Join("/proc", serverPID(t, n), "stat"))
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("%s: short /proc stat: %q", n.Name, stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: /proc stat: %v", n.Name, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100
