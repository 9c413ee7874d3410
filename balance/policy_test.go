package balance_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

func TestNoneUsable(t *testing.T) {
	cases := map[string][]balance.Candidate{
		"nil":   nil,
		"empty": {},
		"one down": {
			{Name: "n0", Latency: time.Millisecond},
		},
		"all down": {
			{Name: "n0", InFlight: 0},
			{Name: "n1", InFlight: 3, Latency: time.Millisecond},
			{Name: "n2", InFlight: 1},
		},
	}
	for _, p := range allPolicies(t) {
		for name, cands := range cases {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				for range 10 {
					require.Equal(t, -1, p.policy.Pick(cands))
				}
			})
		}
	}
}

// TestNeverUnusable picks from random candidate sets (random usable masks,
// in-flight counts and latencies) and checks every answer.
func TestNeverUnusable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]balance.Candidate, len(nodeNames))
	for _, p := range allPolicies(t) {
		t.Run(p.name, func(t *testing.T) {
			for range 20000 {
				cands := randomCands(r, buf)
				checkPick(t, p, cands, p.policy.Pick(cands))
			}
		})
	}
}

func TestOnlyOneUsable(t *testing.T) {
	for _, p := range allPolicies(t) {
		t.Run(p.name, func(t *testing.T) {
			for want := range 3 {
				cands := []balance.Candidate{
					{Name: "n0", InFlight: 0, Latency: time.Microsecond},
					{Name: "n1", InFlight: 0},
					{Name: "n2", InFlight: 0, Latency: time.Microsecond},
				}
				cands[want].Usable = true
				cands[want].InFlight = 100
				cands[want].Latency = time.Second
				for range 20 {
					require.Equal(t, want, p.policy.Pick(cands))
				}
			}
		})
	}
}

// TestConcurrentPick runs every policy from 8 goroutines × 10,000 picks,
// each goroutine with its own random candidate sets; run it with -race.
func TestConcurrentPick(t *testing.T) {
	const goroutines, picks = 8, 10000
	for _, p := range allPolicies(t) {
		t.Run(p.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan string, goroutines)
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 7))
					buf := make([]balance.Candidate, len(nodeNames))
					for range picks {
						cands := randomCands(r, buf)
						got := p.policy.Pick(cands)
						ok := got == -1 || (got >= 0 && got < len(cands) && p.eligible(cands[got]))
						if got == -1 {
							for _, c := range cands {
								ok = ok && !p.eligible(c)
							}
						}
						if !ok {
							errs <- p.name + ": invalid pick"
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Fatal(e)
			}
		})
	}
}

// TestConcurrentTotals checks that concurrent picks lose no turns: from 8
// goroutines × 10,000 picks over one fixed candidate set, the deterministic
// policies end with the totals a single goroutine would produce (to within
// the partial last cycle).
func TestConcurrentTotals(t *testing.T) {
	const goroutines, picks = 8, 10000
	const total = goroutines * picks
	w, err := balance.NewWeighted(map[string]float64{"a": 4, "b": 3, "c": 2})
	require.NoError(t, err)
	cases := []struct {
		name   string
		policy balance.Policy
		cands  []balance.Candidate
		want   []float64 // expected share of the total
		slack  int       // allowed deviation in picks
	}{
		{"round_robin", balance.NewRoundRobin(), allUsable("a", "b", "c"), []float64{1. / 3, 1. / 3, 1. / 3}, 1},
		{"least_in_flight", balance.NewLeastInFlight(), allUsable("a", "b", "c"), []float64{1. / 3, 1. / 3, 1. / 3}, 1},
		{"weighted", w, allUsable("a", "b", "c"), []float64{4. / 9, 3. / 9, 2. / 9}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			got := make([]int, len(tc.cands))
			var wg sync.WaitGroup
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					local := make([]int, len(tc.cands))
					for range picks {
						local[tc.policy.Pick(tc.cands)]++
					}
					mu.Lock()
					for i, n := range local {
						got[i] += n
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			for i, share := range tc.want {
				require.InDelta(t, share*total, float64(got[i]), float64(tc.slack), "index %d, counts %v", i, got)
			}
		})
	}
}

func TestPickAllocs(t *testing.T) {
	cands := []balance.Candidate{
		{Name: "n0", Usable: true, InFlight: 2, Latency: 3 * time.Millisecond},
		{Name: "n1", Usable: false, InFlight: 0, Latency: time.Millisecond},
		{Name: "n2", Usable: true, InFlight: 2, Latency: 0},
		{Name: "n4", Usable: true, InFlight: 1, Latency: 2 * time.Millisecond},
	}
	for _, p := range allPolicies(t) {
		t.Run(p.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() { p.policy.Pick(cands) })
			require.Zero(t, allocs, "allocations per Pick")
		})
	}
	t.Run("PolicyFunc", func(t *testing.T) {
		f := balance.PolicyFunc(func(c []balance.Candidate) int { return len(c) - 1 })
		require.Zero(t, testing.AllocsPerRun(1000, func() { f.Pick(cands) }))
	})
}

func TestPolicyFunc(t *testing.T) {
	var seen []balance.Candidate
	f := balance.PolicyFunc(func(c []balance.Candidate) int {
		seen = c
		return 1
	})
	cands := allUsable("a", "b")
	require.Equal(t, 1, f.Pick(cands))
	require.Equal(t, cands, seen)
}

// FuzzPick checks the Policy contract of every built-in policy on
// candidate sets decoded from arbitrary bytes: three bytes per candidate
// (usable bit and name, in-flight, latency in ms with 0 = unknown).
func FuzzPick(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{0, 0, 0, 1, 3, 10, 3, 3, 10})
	f.Add([]byte{1, 255, 255, 3, 0, 0, 5, 1, 0, 7, 9, 1})
	policies := allPolicies(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var cands []balance.Candidate
		for len(data) >= 3 && len(cands) < 16 {
			cands = append(cands, balance.Candidate{
				Name:     nodeNames[int(data[0]>>1)%len(nodeNames)],
				Usable:   data[0]&1 == 1,
				InFlight: int64(int8(data[1])), // negative counts too: never trust inputs
				Latency:  time.Duration(data[2]) * time.Millisecond,
			})
			data = data[3:]
		}
		for _, p := range policies {
			checkPick(t, p, cands, p.policy.Pick(cands))
		}
	})
}
