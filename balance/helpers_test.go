package balance_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

// nodeNames are the names the shared tests use; weightsFor gives each a
// weight (one of them 0, to cover "never picked").
var nodeNames = []string{"n0", "n1", "n2", "n3", "n4", "n5"}

func weightsFor() map[string]float64 {
	return map[string]float64{"n0": 1, "n1": 2, "n2": 3, "n3": 0, "n4": 1, "n5": 2}
}

// namedPolicy is a fresh built-in policy with the rule that says whether a
// candidate may be picked at all (weight 0 excludes a node for Weighted).
type namedPolicy struct {
	name     string
	policy   balance.Policy
	eligible func(c balance.Candidate) bool
}

func allPolicies(t testing.TB) []namedPolicy {
	t.Helper()
	usable := func(c balance.Candidate) bool { return c.Usable }
	w, err := balance.NewWeighted(weightsFor())
	require.NoError(t, err)
	require.NoError(t, w.Bind(nodeNames))
	weights := weightsFor()
	return []namedPolicy{
		{"round_robin", balance.NewRoundRobin(), usable},
		{"random", balance.NewRandom(), usable},
		{"weighted", w, func(c balance.Candidate) bool { return c.Usable && weights[c.Name] > 0 }},
		{"least_in_flight", balance.NewLeastInFlight(), usable},
		{"latency", balance.NewLatency(), usable},
	}
}

// allUsable returns usable candidates with the given names.
func allUsable(names ...string) []balance.Candidate {
	cands := make([]balance.Candidate, len(names))
	for i, n := range names {
		cands[i] = balance.Candidate{Name: n, Usable: true}
	}
	return cands
}

// randomCands fills cands (len 0..6) with a random usable mask, in-flight
// counts and latencies (some unknown).
func randomCands(r *rand.Rand, buf []balance.Candidate) []balance.Candidate {
	n := r.IntN(len(nodeNames) + 1)
	cands := buf[:n]
	for i := range cands {
		var lat time.Duration
		if r.IntN(4) > 0 {
			lat = time.Duration(1+r.IntN(20)) * time.Millisecond
		}
		cands[i] = balance.Candidate{
			Name:     nodeNames[i],
			Usable:   r.IntN(2) == 0,
			InFlight: int64(r.IntN(5)),
			Latency:  lat,
		}
	}
	return cands
}

// checkPick fails unless got is a valid answer of p for cands: the index
// of an eligible candidate, or -1 exactly when none is eligible.
func checkPick(t testing.TB, p namedPolicy, cands []balance.Candidate, got int) {
	t.Helper()
	anyEligible := false
	for _, c := range cands {
		anyEligible = anyEligible || p.eligible(c)
	}
	if !anyEligible {
		if got != -1 {
			t.Fatalf("%s: Pick = %d, want -1 (nothing eligible) for %+v", p.name, got, cands)
		}
		return
	}
	if got < 0 || got >= len(cands) || !p.eligible(cands[got]) {
		t.Fatalf("%s: Pick = %d, not an eligible candidate of %+v", p.name, got, cands)
	}
}

// counts picks n times from cands and returns the picks per index.
func counts(t testing.TB, p balance.Policy, cands []balance.Candidate, n int) []int {
	t.Helper()
	got := make([]int, len(cands))
	for range n {
		i := p.Pick(cands)
		if i < 0 || i >= len(cands) || !cands[i].Usable {
			t.Fatalf("Pick = %d: not a usable candidate of %+v", i, cands)
		}
		got[i]++
	}
	return got
}

// requireShares checks each index's share of n picks against want (in
// percent) within tol percentage points.
func requireShares(t testing.TB, got []int, n int, want []float64, tol float64) {
	t.Helper()
	for i, w := range want {
		share := 100 * float64(got[i]) / float64(n)
		require.InDelta(t, w, share, tol, "index %d: %.2f%% of %d picks, want %.2f%% ± %.1f pp (counts %v)",
			i, share, n, w, tol, got)
		t.Logf("index %d: %.3f%% (want %.3f%% ± %.1f pp)", i, share, w, tol)
	}
}
