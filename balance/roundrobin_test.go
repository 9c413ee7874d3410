package balance_test

import (
	"testing"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

func TestRoundRobinExactlyEven(t *testing.T) {
	const n = 90000
	cases := []struct {
		name   string
		usable []bool
		want   []int
	}{
		{"3 of 3", []bool{true, true, true}, []int{30000, 30000, 30000}},
		{"middle down", []bool{true, false, true}, []int{45000, 0, 45000}},
		{"first down", []bool{false, true, true}, []int{0, 45000, 45000}},
		{"last down", []bool{true, true, false}, []int{45000, 45000, 0}},
		{"2 of 5", []bool{false, true, false, false, true}, []int{0, 45000, 0, 0, 45000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cands := make([]balance.Candidate, len(tc.usable))
			for i, u := range tc.usable {
				cands[i] = balance.Candidate{Name: nodeNames[i], Usable: u}
			}
			// Exact: tolerance 0 picks.
			require.Equal(t, tc.want, counts(t, balance.NewRoundRobin(), cands, n))
		})
	}
}

func TestRoundRobinOrder(t *testing.T) {
	rr := balance.NewRoundRobin()
	cands := allUsable("a", "b", "c")
	var seq []int
	for range 7 {
		seq = append(seq, rr.Pick(cands))
	}
	require.Equal(t, []int{0, 1, 2, 0, 1, 2, 0}, seq)

	// A node going down takes no turns; the others alternate.
	var zero balance.RoundRobin // the zero value is ready to use
	cands[0].Usable = false
	seq = seq[:0]
	for range 4 {
		seq = append(seq, zero.Pick(cands))
	}
	require.Equal(t, []int{1, 2, 1, 2}, seq)
}
