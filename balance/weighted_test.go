package balance_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

// TestWeightedProportions: weights 4:3:2 over 90,000 picks. Smooth weighted
// round robin is exact (every 9 picks hold 4, 3 and 2 of them); the stated
// tolerance of the shares is ±2 pp, and the exact counts are checked too.
func TestWeightedProportions(t *testing.T) {
	const n = 90000
	w, err := balance.NewWeighted(map[string]float64{"a": 4, "b": 3, "c": 2})
	require.NoError(t, err)
	require.NoError(t, w.Bind([]string{"a", "b", "c"}))
	cands := allUsable("a", "b", "c")

	got := counts(t, w, cands, n)
	requireShares(t, got, n, []float64{400. / 9, 300. / 9, 200. / 9}, 2)
	require.Equal(t, []int{40000, 30000, 20000}, got)

	// Every window of 9 consecutive picks is exact.
	for range 100 {
		win := counts(t, w, cands, 9)
		require.Equal(t, []int{4, 3, 2}, win)
	}
}

// TestWeightedSmooth checks nginx's example: 5:1:1 is interleaved.
func TestWeightedSmooth(t *testing.T) {
	w, err := balance.NewWeighted(map[string]float64{"a": 5, "b": 1, "c": 1})
	require.NoError(t, err)
	cands := allUsable("a", "b", "c")
	var seq strings.Builder
	for range 14 {
		seq.WriteString(cands[w.Pick(cands)].Name)
	}
	require.Equal(t, "aabacaaaabacaa", seq.String())
}

// TestWeightedSkipsUnusable: an unusable node's share goes to the others in
// proportion to their own weights (3:2 → 60/40, exact), a weight-0 node is
// never picked, and the node's turns resume when it is back.
func TestWeightedSkipsUnusable(t *testing.T) {
	const n = 90000
	w, err := balance.NewWeighted(map[string]float64{"a": 4, "b": 3, "c": 2, "z": 0})
	require.NoError(t, err)
	cands := allUsable("a", "b", "c", "z")

	cands[0].Usable = false
	got := counts(t, w, cands, n)
	requireShares(t, got, n, []float64{0, 60, 40, 0}, 2)
	require.Equal(t, []int{0, 54000, 36000, 0}, got)

	cands[0].Usable = true
	got = counts(t, w, cands, n)
	requireShares(t, got, n, []float64{400. / 9, 300. / 9, 200. / 9, 0}, 2)

	// Only the weight-0 node usable: nothing to pick.
	for i := range 3 {
		cands[i].Usable = false
	}
	require.Equal(t, -1, w.Pick(cands))
}

func TestWeightedUnknownNameAtPick(t *testing.T) {
	w, err := balance.NewWeighted(map[string]float64{"a": 1, "b": 1})
	require.NoError(t, err)
	cands := allUsable("x", "b", "y")
	for range 10 {
		require.Equal(t, 1, w.Pick(cands))
	}
	require.Equal(t, -1, w.Pick(allUsable("x", "y")))

	var zero balance.Weighted // no weights: picks nothing
	require.Equal(t, -1, zero.Pick(cands))
}

func TestWeightedFractional(t *testing.T) {
	const n = 100000
	w, err := balance.NewWeighted(map[string]float64{"a": 0.5, "b": 0.25, "c": 0.25})
	require.NoError(t, err)
	got := counts(t, w, allUsable("a", "b", "c"), n)
	require.Equal(t, []int{50000, 25000, 25000}, got)
}

func TestNewWeightedErrors(t *testing.T) {
	cases := []struct {
		name    string
		weights map[string]float64
		want    []string // substrings of the message
		field   string   // WeightError.Name
	}{
		{"negative", map[string]float64{"a": 1, "replica2": -1}, []string{`"replica2"`, "-1", ">= 0"}, "replica2"},
		{"NaN", map[string]float64{"replica1": math.NaN(), "b": 1}, []string{`"replica1"`, "NaN"}, "replica1"},
		{"+Inf", map[string]float64{"replica1": math.Inf(1)}, []string{`"replica1"`, "+Inf"}, "replica1"},
		{"-Inf", map[string]float64{"primary": math.Inf(-1), "b": 2}, []string{`"primary"`, "-Inf"}, "primary"},
		{"all zero", map[string]float64{"primary": 0, "replica1": 0}, []string{`"primary"=0`, `"replica1"=0`, "> 0"}, ""},
		{"empty", map[string]float64{}, []string{"none given", "> 0"}, ""},
		{"nil", nil, []string{"none given"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := balance.NewWeighted(tc.weights)
			require.Nil(t, w)
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "balance: "), msg)
			for _, s := range tc.want {
				require.Contains(t, msg, s)
			}
			var we *balance.WeightError
			require.True(t, errors.As(err, &we))
			require.Equal(t, tc.field, we.Name)
			if tc.field != "" {
				require.Equal(t, math.Float64bits(tc.weights[tc.field]), math.Float64bits(we.Weight))
			}
			t.Log(msg)
		})
	}
}

func TestWeightedBind(t *testing.T) {
	w, err := balance.NewWeighted(map[string]float64{"primary": 0, "replica1": 4, "replcia2": 3})
	require.NoError(t, err)

	// The typo that would silently leave replica2 idle is an error naming the
	// key, its value, and the known names.
	err = w.Bind([]string{"primary", "replica1", "replica2"})
	require.Error(t, err)
	require.Equal(t, `balance: weight for "replcia2" is 3: no read candidate has that name; `+
		`known: "primary", "replica1", "replica2"`, err.Error())
	var we *balance.WeightError
	require.True(t, errors.As(err, &we))
	require.Equal(t, "replcia2", we.Name)
	require.Equal(t, 3.0, we.Weight)

	// A candidate with no weight.
	w, err = balance.NewWeighted(map[string]float64{"primary": 0, "replica1": 4})
	require.NoError(t, err)
	err = w.Bind([]string{"primary", "replica1", "replica3"})
	require.Error(t, err)
	require.Contains(t, err.Error(), `balance: weight for "replica3": missing`)
	require.Contains(t, err.Error(), `"primary", "replica1"`)
	require.True(t, errors.As(err, &we))
	require.Equal(t, "replica3", we.Name)

	// Duplicate candidate names.
	err = w.Bind([]string{"primary", "replica1", "replica1"})
	require.ErrorContains(t, err, `weight for "replica1": the read candidate names are not unique`)

	// Matching names bind; order does not matter.
	require.NoError(t, w.Bind([]string{"replica1", "primary"}))
}

// TestWeightedBoundOrder: after Bind, candidates passed in another order,
// or a subset, still get their own weights (by name).
func TestWeightedBoundOrder(t *testing.T) {
	const n = 90000
	w, err := balance.NewWeighted(map[string]float64{"a": 4, "b": 3, "c": 2})
	require.NoError(t, err)
	require.NoError(t, w.Bind([]string{"a", "b", "c"}))
	require.Equal(t, []int{20000, 40000, 30000}, counts(t, w, allUsable("c", "a", "b"), n))
	require.Equal(t, []int{54000, 36000}, counts(t, w, allUsable("b", "c"), n))

	// A failed Bind keeps the previous binding working.
	require.Error(t, w.Bind([]string{"a", "b", "x"}))
	require.Equal(t, []int{40000, 30000, 20000}, counts(t, w, allUsable("a", "b", "c"), n))
}
