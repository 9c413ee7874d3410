//go:build tpcc

package tpcc_test

import (
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// Sliced pairs. Whole runs of 15 s, one side after the other, put each
// side on the machine as it was during its own run: on a machine that
// shares its cores with three servers and other tenants, a pair's two
// runs differ by more than rwshard costs (pair CPU ratios 0.87–1.20 where
// the median is about 1.02). A sliced pair opens both sides at once and
// alternates them in short slices (-tpcc.slice) until each has run
// -tpcc.duration: both sample the same seconds of the machine's drift.
// Only one side runs at a time (a slice ends when its last thread has
// finished its transaction), and every slice has its own readings of the
// client's CPU, the primary's CPU and the servers' counters.

// sliced reports whether the pairs run in slices: -tpcc.slice set and
// shorter than -tpcc.duration.
func sliced() bool { return *slice > 0 && *slice < *pairDuration }

// slicesPerSide is how many slices of -tpcc.slice make up a side's
// -tpcc.duration (rounded up).
func slicesPerSide() int { return int((*pairDuration + *slice - 1) / *slice) }

// slicedPair runs pair p: both sides open, in pairOrder(p), then
// alternating slices starting with the first, each slice's server
// counters added to the write audit under its side, and direct's slices
// rid of rwshard's background work (takeOutIdle).
func slicedPair(t *testing.T, l *lab.Lab, p int, audit *writeAudit, idle map[string]float64) []tpccResult {
	t.Helper()
	order := pairOrder(p)
	sides := make([]*tpccSide, len(order))
	for i, side := range order {
		sides[i] = openTPCC(t, l, side)
	}
	n := slicesPerSide()
	stop := profile(t, "pair")
	snap := snapshot(t, l)
	for k := range 2 * n {
		s := sides[k%2]
		s.run(l, *slice)
		if k == 2*n-1 {
			stop()
			// The pair's replication lands within its counters, and
			// the next pair does not share the machine with a catch-up.
			syncReplicas(t, l, replicaTimeout)
		}
		next := snapshot(t, l)
		audit.add(l, s.r.side, snap, next)
		snap = next
	}
	rs := make([]tpccResult, len(sides))
	for i, s := range sides {
		rs[i] = s.finish()
	}
	takeOutIdle(rs, idle)
	return rs
}

// idleWindow is how long idleCost reads each idle cost.
const idleWindow = 10 * time.Second

// idleCost measures what the process spends while it runs nothing: with
// neither side open (noSide), then with each side open as in a pair
// (threads holding connections, statements prepared). rwshard's reading
// less the process's own is its handle's background work, its health
// probes of the three nodes (idleTakeOut); direct's handle has none
// (database/sql and go-sql-driver start no goroutine that wakes by itself
// on this pool). It returns CPU nanoseconds per second of wall
// time, by side.
func idleCost(t *testing.T, l *lab.Lab) map[string]float64 {
	t.Helper()
	idle := map[string]float64{}
	read := func() float64 {
		cpu0, t0 := cpuTime(), time.Now()
		time.Sleep(idleWindow)
		return float64(cpuTime()-cpu0) / time.Since(t0).Seconds()
	}
	time.Sleep(time.Second) // past the warm-up runs' closing
	idle[noSide] = read()
	t.Logf("idle cost of the process with neither side open: %.0f µs of CPU per second", idle[noSide]/1e3)
	for _, side := range pairOrder(0) {
		s := openTPCC(t, l, side)
		time.Sleep(time.Second) // past the opening's own work
		idle[side] = read()
		s.close()
	}
	for _, side := range pairOrder(0) {
		t.Logf("idle cost of an open %s side (%d threads holding connections, nothing running): %.0f µs of CPU per second",
			side, *threads, idle[side]/1e3)
	}
	t.Logf("rwshard's background work: %.0f µs of CPU per second, taken out of direct's slices (see idleTakeOut)",
		float64(idleTakeOut(idle, direct, time.Second))/1e3)
	return idle
}

// takeOutIdle takes out of direct's slices of a sliced pair what
// rwshard's open handle did in the background during them (at its idle
// rate: see idleTakeOut). Both handles stay open for the whole pair, so
// direct's slices also carry rwshard's probes, which direct running alone
// would not. rwshard's own probes during its own slices stay in them, as
// in a whole run, where the handle is open for rwshard's run only; and
// nothing is taken out of rwshard's slices, as direct's handle does no
// background work.
// The idle rate is more than the probes cost a busy process (it pays for
// waking the idle one), so direct's figure is if anything too low and
// the ratio too high. Before run 80 (README) the harness also added the
// taken-out CPU to rwshard's slices: rwshard was charged its probes over
// both sides' wall time, twice what a run of its own pays. Runs 80-86
// also took direct's reading above the least out of rwshard's slices.
func takeOutIdle(rs []tpccResult, idle map[string]float64) {
	for i := range rs {
		rs[i].takenOut = idleTakeOut(idle, rs[i].side, rs[i].wall)
	}
}
