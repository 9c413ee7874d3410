package balance_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

func TestByName(t *testing.T) {
	for _, name := range []string{"round_robin", "random", "least_in_flight", "latency"} {
		t.Run(name, func(t *testing.T) {
			p, err := balance.ByName(name)
			require.NoError(t, err)
			require.Equal(t, name, p.(fmt.Stringer).String())
			q, err := balance.ByName(name)
			require.NoError(t, err)
			switch name {
			case "round_robin", "least_in_flight": // stateful: no shared counter
				require.NotSame(t, p, q, "each call returns a fresh policy")
			}
		})
	}
}

func TestByNameErrors(t *testing.T) {
	_, err := balance.ByName("weighted")
	require.EqualError(t, err, `balance: policy "weighted" needs a weight per node: build it with NewWeighted (DSN: rwshard.weights)`)
	require.False(t, errors.Is(err, balance.ErrUnknownPolicy))

	for _, name := range []string{"roundrobin", "Round_Robin", "", "least-in-flight"} {
		_, err := balance.ByName(name)
		require.ErrorIs(t, err, balance.ErrUnknownPolicy)
		require.Equal(t, fmt.Sprintf(`balance: policy %q: unknown balance policy; `+
			`valid names: round_robin, random, weighted, least_in_flight, latency`, name), err.Error())
	}
}

func TestNames(t *testing.T) {
	names := balance.Names()
	require.Equal(t, []string{"round_robin", "random", "weighted", "least_in_flight", "latency"}, names)
	names[0] = "changed"
	require.Equal(t, "round_robin", balance.Names()[0], "the caller owns the slice")

	w, err := balance.NewWeighted(map[string]float64{"a": 1})
	require.NoError(t, err)
	require.Equal(t, "weighted", w.String())
}
