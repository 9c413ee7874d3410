package balance_test

import (
	"testing"
	"time"

	"github.com/rwshard/rwshard/balance"
)

// benchCands is three usable candidates with different load and latency.
func benchCands() []balance.Candidate {
	return []balance.Candidate{
		{Name: "n0", Usable: true, InFlight: 3, Latency: 2 * time.Millisecond},
		{Name: "n1", Usable: true, InFlight: 1, Latency: 3 * time.Millisecond},
		{Name: "n2", Usable: true, InFlight: 2, Latency: time.Millisecond},
	}
}

// BenchmarkPick picks from 3 candidates, one goroutine.
func BenchmarkPick(b *testing.B) {
	for _, p := range allPolicies(b) {
		b.Run(p.name, func(b *testing.B) {
			cands := benchCands()
			b.ReportAllocs()
			for b.Loop() {
				p.policy.Pick(cands)
			}
		})
	}
}

// BenchmarkPickParallel picks from 3 candidates from GOMAXPROCS goroutines
// sharing one policy: the cost of contention on its counter or mutex.
func BenchmarkPickParallel(b *testing.B) {
	for _, p := range allPolicies(b) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				cands := benchCands()
				for pb.Next() {
					p.policy.Pick(cands)
				}
			})
		})
	}
}

func BenchmarkEWMA(b *testing.B) {
	b.Run("Observe", func(b *testing.B) {
		var e balance.EWMA
		b.ReportAllocs()
		for b.Loop() {
			e.Observe(time.Millisecond)
		}
	})
	b.Run("ObserveParallel", func(b *testing.B) {
		var e balance.EWMA
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				e.Observe(time.Millisecond)
			}
		})
	})
}
