package tpcc_test

import (
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pingcap/go-tpc/pkg/measurement"
)

// The summary parser on lines made by go-tpc's own formatter
// (measurement.Histogram.Summary, printed as tpcc's outputRtMeasurement
// prints it), and on malformed input. Needs no lab.
func TestParseSummary(t *testing.T) {
	h := measurement.NewHistogram(time.Millisecond, measurement.DefaultMaxLatency, 1)
	for i := 1; i <= 100; i++ {
		h.Measure(time.Duration(i) * time.Millisecond)
	}
	e := measurement.NewHistogram(time.Millisecond, measurement.DefaultMaxLatency, 1)
	e.Measure(3 * time.Millisecond)
	var b strings.Builder
	fmt.Fprintf(&b, "[Summary] %-6s - %s\n", "NEW_ORDER", h.Summary())
	fmt.Fprintf(&b, "[Summary] %-6s - %s\n", "NEW_ORDER_ERR", e.Summary())
	fmt.Fprintf(&b, "[Summary] %-6s - %s\n", "PAYMENT", e.Summary())
	b.WriteString("tpmC: 1234.5, efficiency: 4800.0%\n")

	s, err := parseSummary(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if s.TpmC != 1234.5 {
		t.Errorf("tpmC %v, want 1234.5", s.TpmC)
	}
	no := s.Ops["NEW_ORDER"]
	if no.Count != 100 {
		t.Errorf("NEW_ORDER count %d, want 100", no.Count)
	}
	// 1 significant figure: the histogram's buckets are about 6% wide.
	if no.P50 < 45 || no.P50 > 55 || no.P99 < 93 || no.P99 > 105 {
		t.Errorf("NEW_ORDER p50 %v, p99 %v: want about 50 and 99", no.P50, no.P99)
	}
	if s.Ops["NEW_ORDER_ERR"].Count != 1 || s.Ops["PAYMENT"].Count != 1 || len(s.Ops) != 3 {
		t.Errorf("ops %v", s.Ops)
	}
	if got := s.count(); got != 102 {
		t.Errorf("count %d, want 102", got)
	}

	for _, bad := range []string{
		"[Summary] NEW_ORDER Takes(s): 1.0",
		"[Summary] NEW_ORDER - Takes(s): 1.0, Count: x",
		"[Summary] NEW_ORDER - Takes(s): 1.0, Count: 3",
		"tpmC: many",
	} {
		if _, err := parseSummary(bad); err == nil {
			t.Errorf("parseSummary(%q): no error", bad)
		}
	}
	// Lines that are not the summary (go-tpc's other output) are ignored.
	if s, err := parseSummary("creating table stock\n[Current] PAYMENT - Takes(s): 1.0\n"); err != nil || len(s.Ops) != 0 {
		t.Errorf("other lines: %v, %v", s.Ops, err)
	}
}

func TestMedianQuantile(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if quantile(d, 0.5) != 50 || quantile(d, 0.99) != 99 || quantile(d, 1) != 100 || quantile(nil, 0.5) != 0 {
		t.Errorf("quantile: %v %v %v", quantile(d, 0.5), quantile(d, 0.99), quantile(d, 1))
	}
}

// orderBalanced recovers a side's effect and an order's effect that the
// pairs' ratios mix, and refuses pairs in one order only.
func TestOrderBalanced(t *testing.T) {
	const side, order = 1.02, 1.05
	var ratios []float64
	for p := range 6 {
		r := side * order // direct first: rwshard ran second
		if pairOrder(p)[0] == viaRW {
			r = side / order
		}
		ratios = append(ratios, r)
	}
	s, o, ok := orderBalanced(ratios)
	if !ok || math.Abs(s-side) > 1e-9 || math.Abs(o-order) > 1e-9 {
		t.Errorf("orderBalanced = %.4f, %.4f, %v; want %.4f, %.4f", s, o, ok, side, order)
	}
	if _, _, ok := orderBalanced(ratios[:1]); ok {
		t.Error("one pair: the order cannot be separated")
	}
}

// idleTakeOut takes out of direct's slices rwshard's background work
// over their wall time: rwshard's idle cost less the least reading, the
// process's own; and nothing out of rwshard's slices, whatever direct's
// reading.
func TestIdleTakeOut(t *testing.T) {
	const us = float64(time.Microsecond)
	cases := []struct {
		idle map[string]float64
		side string
		wall time.Duration
		want time.Duration
	}{
		// rwshard's probes out of direct's slices, nothing out of rwshard's
		{map[string]float64{noSide: 100 * us, viaRW: 1000 * us, direct: 100 * us}, direct, 15 * time.Second, 13500 * time.Microsecond},
		{map[string]float64{noSide: 100 * us, viaRW: 1000 * us, direct: 100 * us}, viaRW, 15 * time.Second, 0},
		// the reading with neither side open the higher one: direct's is the base
		{map[string]float64{noSide: 205 * us, viaRW: 1121 * us, direct: 62 * us}, direct, 10 * time.Second, 10590 * time.Microsecond},
		{map[string]float64{noSide: 205 * us, viaRW: 1121 * us, direct: 62 * us}, viaRW, 10 * time.Second, 0},
		// direct's reading above the base is noise: nothing out of rwshard's slices
		{map[string]float64{noSide: 50 * us, viaRW: 1000 * us, direct: 130 * us}, viaRW, 15 * time.Second, 0},
		{map[string]float64{noSide: 50 * us, viaRW: 1000 * us, direct: 130 * us}, direct, 15 * time.Second, 14250 * time.Microsecond},
		{map[string]float64{noSide: 100 * us, viaRW: 1000 * us, direct: 100 * us}, direct, 0, 0},
	}
	for _, c := range cases {
		if got := idleTakeOut(c.idle, c.side, c.wall); got != c.want {
			t.Errorf("idleTakeOut(%v, %s, %v) = %v, want %v", c.idle, c.side, c.wall, got, c.want)
		}
	}
}

// heap's readings rise by what the process allocates, and the
// collector's CPU by a collection.
func TestHeap(t *testing.T) {
	b0, n0, gc0 := heap()
	keep := make([][]byte, 0, 1000)
	for range 1000 {
		keep = append(keep, make([]byte, 1024))
	}
	runtime.GC()
	b1, n1, gc1 := heap()
	if b1-b0 < 1000*1024 || n1-n0 < 1000 {
		t.Errorf("after 1000 allocations of 1 KiB: %d bytes, %d objects more", b1-b0, n1-n0)
	}
	if gc1 <= gc0 {
		t.Errorf("after a collection: garbage collection CPU %v, was %v", gc1, gc0)
	}
	runtime.KeepAlive(keep)
}

// countsAgree accepts what go-tpc's histogram-creation race can lose and
// nothing else: go-tpc short of the harness by up to threads-1 per
// histogram (2 per transaction type), never over it.
func TestCountsAgree(t *testing.T) {
	cases := []struct {
		harness, goTPC int64
		threads, types int
		lost           int64
		ok             bool
	}{
		{10086, 10086, 8, 5, 0, true},
		{10086, 10085, 8, 5, 1, true},   // run 48's pair 15
		{10086, 10016, 8, 5, 70, true},  // the bound: 2 × 5 × 7
		{10086, 10015, 8, 5, 71, false}, // beyond it
		{10085, 10086, 8, 5, -1, false}, // go-tpc counted a transaction the harness did not run
		{100, 99, 1, 5, 1, false},       // one thread: no race to lose it to
	}
	for _, c := range cases {
		lost, ok := countsAgree(c.harness, c.goTPC, c.threads, c.types)
		if lost != c.lost || ok != c.ok {
			t.Errorf("countsAgree(%d, %d, %d, %d) = %d, %v; want %d, %v", c.harness, c.goTPC, c.threads, c.types, lost, ok, c.lost, c.ok)
		}
	}
}

// profile records -bench.cpuprofile.rate in the profile it writes: the
// sampling period is a second divided by the rate, pprof's own 100 or
// the one set before it starts. Not while go test writes a CPU profile
// of its own (-cpuprofile): a process has one.
func TestProfileRate(t *testing.T) {
	if f := flag.Lookup("test.cpuprofile"); f != nil && f.Value.String() != "" {
		t.Skip("go test's -cpuprofile holds the process's one CPU profile")
	}
	dir, rate := *cpuProfiles, *cpuRate
	defer func() { *cpuProfiles, *cpuRate = dir, rate }()
	*cpuProfiles = t.TempDir()
	for _, hz := range []int{100, 250} {
		*cpuRate = hz
		profile(t, "rate")()
		names, err := filepath.Glob(filepath.Join(*cpuProfiles, "*.pprof"))
		if err != nil || len(names) == 0 {
			t.Fatalf("no profile written (%v)", err)
		}
		last := names[len(names)-1]
		if got, want := profilePeriod(t, last), int64(time.Second)/int64(hz); got != want {
			t.Errorf("rate %d: %s records a period of %d ns, want %d", hz, filepath.Base(last), got, want)
		}
		os.Remove(last)
	}
}

// profilePeriod reads the sampling period (field 12 of the Profile
// message) from a gzipped pprof profile.
func profilePeriod(t *testing.T, name string) int64 {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			break
		}
		b = b[n:]
		skip := 0
		switch key & 7 {
		case 0:
			v, n := binary.Uvarint(b)
			if key>>3 == 12 {
				return int64(v)
			}
			skip = n
		case 1:
			skip = 8
		case 2:
			l, n := binary.Uvarint(b)
			skip = n + int(l)
		case 5:
			skip = 4
		}
		if skip <= 0 || skip > len(b) {
			break
		}
		b = b[skip:]
	}
	t.Fatalf("%s: no sampling period in the profile", name)
	return 0
}
