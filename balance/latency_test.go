package balance_test

import (
	"testing"
	"time"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

// TestLatencyPrefersFast: two 1 ms nodes and one 10 ms node, equal load,
// 10,000 picks. The slow node loses every draw it is in, so it must get
// under 10% (it gets 0); the fast nodes split the rest, each 50% ± 3 pp
// (the standard deviation is 0.5 pp).
func TestLatencyPrefersFast(t *testing.T) {
	const n = 10000
	cands := []balance.Candidate{
		{Name: "fast1", Usable: true, InFlight: 1, Latency: time.Millisecond},
		{Name: "slow", Usable: true, InFlight: 1, Latency: 10 * time.Millisecond},
		{Name: "fast2", Usable: true, InFlight: 1, Latency: time.Millisecond},
	}
	got := counts(t, balance.NewLatency(), cands, n)
	require.Less(t, float64(got[1])/n, 0.10, "slow node share, counts %v", got)
	requireShares(t, got, n, []float64{50, 0, 50}, 3)
}

// TestLatencyScore: in-flight work counts against a fast node.
func TestLatencyScore(t *testing.T) {
	type c = balance.Candidate
	cases := []struct {
		name string
		a, b c
		want int
	}{
		{"lower latency", c{Latency: 2 * time.Millisecond}, c{Latency: time.Millisecond}, 1},
		{"fast but queued", c{Latency: time.Millisecond, InFlight: 9}, c{Latency: 5 * time.Millisecond}, 1},
		{"fast, short queue", c{Latency: time.Millisecond, InFlight: 3}, c{Latency: 5 * time.Millisecond}, 0},
		{"unknown beats known", c{Latency: time.Millisecond}, c{}, 1},
		{"unknown but stalled", c{Latency: time.Millisecond}, c{InFlight: 5}, 0},
		{"both unknown: fewer in flight", c{InFlight: 2}, c{InFlight: 1}, 1},
		{"negative in-flight counts as 0", c{Latency: time.Millisecond, InFlight: -5}, c{Latency: time.Millisecond, InFlight: 1}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.Usable, tc.b.Usable = true, true
			p := balance.NewLatency()
			// Two usable candidates: both are always drawn, in either order.
			for range 50 {
				require.Equal(t, tc.want, p.Pick([]balance.Candidate{tc.a, tc.b}))
				require.Equal(t, 1-tc.want, p.Pick([]balance.Candidate{tc.b, tc.a}))
			}
		})
	}
}

// TestLatencyExplores: a node with unknown latency wins every draw it is in
// at equal load, i.e. 2/3 of the picks among three nodes (± 3 pp; the
// standard deviation is 0.5 pp).
func TestLatencyExplores(t *testing.T) {
	const n = 10000
	cands := []balance.Candidate{
		{Name: "a", Usable: true, Latency: time.Millisecond},
		{Name: "new", Usable: true},
		{Name: "b", Usable: true, Latency: time.Millisecond},
	}
	got := counts(t, balance.NewLatency(), cands, n)
	requireShares(t, got, n, []float64{100. / 6, 200. / 3, 100. / 6}, 3)
}

// TestLatencySimulation runs a closed loop: 32 workers, each picking a node,
// holding it for the node's service time (1 ms, 1 ms, 10 ms), feeding the
// duration to the node's EWMA, and picking again. Latencies start unknown.
// The 10× slower node must get under 10% of the 10,000 picks.
func TestLatencySimulation(t *testing.T) {
	const workers, picks = 32, 10000
	service := []time.Duration{time.Millisecond, 10 * time.Millisecond, time.Millisecond}
	ewma := make([]balance.EWMA, len(service))
	cands := allUsable("fast1", "slow", "fast2")
	p := balance.NewLatency()

	type job struct {
		node int
		done time.Duration
	}
	var now time.Duration
	running := make([]job, 0, workers)
	got := make([]int, len(cands))
	start := func() {
		for i := range cands {
			cands[i].Latency = ewma[i].Value()
		}
		i := p.Pick(cands)
		got[i]++
		cands[i].InFlight++
		running = append(running, job{i, now + service[i]})
	}
	for range workers {
		start()
	}
	for n := workers; n < picks; n++ {
		first := 0 // the job that finishes first
		for j := range running {
			if running[j].done < running[first].done {
				first = j
			}
		}
		jb := running[first]
		running = append(running[:first], running[first+1:]...)
		now = jb.done
		cands[jb.node].InFlight--
		ewma[jb.node].Observe(service[jb.node])
		start()
	}
	share := float64(got[1]) / picks
	t.Logf("picks %v, slow share %.2f%%", got, 100*share)
	require.Less(t, share, 0.10)
	require.Positive(t, got[1], "the slow node was never explored")
}
