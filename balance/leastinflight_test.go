package balance_test

import (
	"testing"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

func TestLeastInFlightPicksMinimum(t *testing.T) {
	type c = balance.Candidate
	cases := []struct {
		name  string
		cands []c
		want  int
	}{
		{"first", []c{{Usable: true, InFlight: 0}, {Usable: true, InFlight: 1}, {Usable: true, InFlight: 2}}, 0},
		{"last", []c{{Usable: true, InFlight: 5}, {Usable: true, InFlight: 4}, {Usable: true, InFlight: 3}}, 2},
		{"middle", []c{{Usable: true, InFlight: 7}, {Usable: true, InFlight: 2}, {Usable: true, InFlight: 9}}, 1},
		{"unusable minimum skipped", []c{{Usable: true, InFlight: 7}, {Usable: false, InFlight: 0}, {Usable: true, InFlight: 3}}, 2},
		{"negative count", []c{{Usable: true, InFlight: 1}, {Usable: true, InFlight: -1}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := balance.NewLeastInFlight()
			for range 10 {
				require.Equal(t, tc.want, p.Pick(tc.cands))
			}
		})
	}
}

// TestLeastInFlightTies: equal load spreads exactly evenly among the tied
// candidates (tolerance 0 picks), and never to a busier or unusable one.
func TestLeastInFlightTies(t *testing.T) {
	const n = 90000
	cands := []balance.Candidate{
		{Name: "a", Usable: true, InFlight: 2},
		{Name: "b", Usable: true, InFlight: 1},
		{Name: "c", Usable: false, InFlight: 1},
		{Name: "d", Usable: true, InFlight: 1},
	}
	require.Equal(t, []int{0, 45000, 0, 45000}, counts(t, balance.NewLeastInFlight(), cands, n))

	var zero balance.LeastInFlight // the zero value is ready to use
	require.Equal(t, []int{30000, 30000, 30000}, counts(t, &zero, allUsable("a", "b", "c"), n))
}
