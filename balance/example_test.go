package balance_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/rwshard/rwshard/balance"
)

// Weights 2:1 give a smooth, deterministic sequence: replica1 twice for
// each replica2, interleaved.
func ExampleNewWeighted() {
	w, err := balance.NewWeighted(map[string]float64{"primary": 0, "replica1": 2, "replica2": 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Bind([]string{"primary", "replica1", "replica2"}); err != nil {
		fmt.Println(err)
		return
	}
	cands := []balance.Candidate{
		{Name: "primary", Usable: true},
		{Name: "replica1", Usable: true},
		{Name: "replica2", Usable: true},
	}
	var seq []string
	for range 6 {
		seq = append(seq, cands[w.Pick(cands)].Name)
	}
	fmt.Println(strings.Join(seq, " "))
	// Output:
	// replica1 replica2 replica1 replica1 replica2 replica1
}

// A weight key that names no read candidate is a configuration error, not
// a node that silently never gets reads.
func ExampleWeighted_Bind() {
	w, _ := balance.NewWeighted(map[string]float64{"primary": 0, "replica1": 4, "replcia2": 3})
	err := w.Bind([]string{"primary", "replica1", "replica2"})
	fmt.Println(err)
	// Output:
	// balance: weight for "replcia2" is 3: no read candidate has that name; known: "primary", "replica1", "replica2"
}

// A custom policy: keep reads on the replica in the caller's zone while it
// is usable, else take the least busy usable node.
func ExamplePolicyFunc() {
	fallback := balance.NewLeastInFlight()
	local := balance.PolicyFunc(func(cands []balance.Candidate) int {
		for i, c := range cands {
			if c.Usable && c.Name == "replica-eu1" {
				return i
			}
		}
		return fallback.Pick(cands)
	})

	cands := []balance.Candidate{
		{Name: "replica-us1", Usable: true, InFlight: 4},
		{Name: "replica-eu1", Usable: true, InFlight: 9},
		{Name: "replica-us2", Usable: true, InFlight: 2},
	}
	fmt.Println(cands[local.Pick(cands)].Name)
	cands[1].Usable = false // fenced for lag
	fmt.Println(cands[local.Pick(cands)].Name)
	// Output:
	// replica-eu1
	// replica-us2
}

// Unusable candidates take no turns.
func ExampleNewRoundRobin() {
	rr := balance.NewRoundRobin()
	cands := []balance.Candidate{
		{Name: "replica1", Usable: true},
		{Name: "replica2", Usable: false}, // down
		{Name: "replica3", Usable: true},
	}
	var seq []string
	for range 4 {
		seq = append(seq, cands[rr.Pick(cands)].Name)
	}
	fmt.Println(strings.Join(seq, " "))
	cands[0].Usable, cands[2].Usable = false, false
	fmt.Println(rr.Pick(cands))
	// Output:
	// replica1 replica3 replica1 replica3
	// -1
}

func ExampleByName() {
	p, err := balance.ByName("least_in_flight")
	fmt.Println(p, err)
	_, err = balance.ByName("leastconn")
	fmt.Println(err)
	// Output:
	// least_in_flight <nil>
	// balance: policy "leastconn": unknown balance policy; valid names: round_robin, random, weighted, least_in_flight, latency
}

// The driver keeps one EWMA per node and copies its value into the
// candidate at pick time.
func ExampleEWMA() {
	var lat balance.EWMA
	fmt.Println(lat.Value()) // unknown yet
	lat.Observe(10 * time.Millisecond)
	fmt.Println(lat.Value()) // the first observation sets it
	lat.Observe(20 * time.Millisecond)
	fmt.Println(lat.Value()) // 10ms + 0.2 × (20ms − 10ms)
	// Output:
	// 0s
	// 10ms
	// 12ms
}

// With two usable candidates, the power of two choices compares both:
// latency × (in-flight + 1) is 2ms×4 = 8ms against 5ms×1 = 5ms.
func ExampleNewLatency() {
	p := balance.NewLatency()
	cands := []balance.Candidate{
		{Name: "replica1", Usable: true, InFlight: 3, Latency: 2 * time.Millisecond},
		{Name: "replica2", Usable: true, InFlight: 0, Latency: 5 * time.Millisecond},
		{Name: "replica3", Usable: false, Latency: time.Millisecond},
	}
	fmt.Println(cands[p.Pick(cands)].Name)
	// Output:
	// replica2
}
