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
// counters added to the write audit under its side, and each side's
// idle cost (idleCost) moved back to it (chargeIdle).
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
	chargeIdle(rs, idle)
	return rs
}

// idleWindow is how long idleCost reads each side's idle cost.
const idleWindow = 10 * time.Second

// idleCost measures, per side, what the process spends while that side
// is open as in a pair (threads holding connections, statements
// prepared) and runs nothing: for rwshard, its health probes of the
// three nodes; for direct, about nothing. In a sliced pair each side's
// idle cost lands in the other side's slices; chargeIdle moves it back.
// It returns CPU nanoseconds per second of wall time, by side.
func idleCost(t *testing.T, l *lab.Lab) map[string]float64 {
	t.Helper()
	idle := map[string]float64{}
	for _, side := range pairOrder(0) {
		s := openTPCC(t, l, side)
		time.Sleep(time.Second) // past the opening's own work
		cpu0, t0 := cpuTime(), time.Now()
		time.Sleep(idleWindow)
		idle[side] = float64(cpuTime()-cpu0) / time.Since(t0).Seconds()
		s.close()
		t.Logf("idle cost of an open %s side (%d threads holding connections, nothing running): %.0f µs of CPU per second", side, *threads, idle[side]/1e3)
	}
	return idle
}

// chargeIdle moves, between the two sides of a sliced pair, what each
// side's open, idle handle cost the process during the other's slices
// (idle: CPU per second of wall time, by side; see idleCost), so that
// each side is charged its own background work, as in whole runs.
func chargeIdle(rs []tpccResult, idle map[string]float64) {
	a, b := &rs[0], &rs[1]
	m := idleMove(idle[a.side], idle[b.side], a.wall, b.wall)
	a.idle += m
	b.idle -= m
}
