package health

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventKindString(t *testing.T) {
	want := map[EventKind]string{
		NodeDown: "node-down", NodeUp: "node-up", Fenced: "fenced", Unfenced: "unfenced",
		PrimaryLost: "primary-lost", PrimaryFound: "primary-found",
		SwitchoverFollowed: "switchover-followed", SplitBrain: "split-brain",
		FallbackToPrimary: "fallback-to-primary", ReadRetried: "read-retried",
		0: "event(0)", 99: "event(99)",
	}
	for k, s := range want {
		assert.Equal(t, s, k.String(), "kind %d", uint8(k))
	}
	// Every declared kind has a name of its own.
	seen := map[string]bool{}
	for k := NodeDown; k <= ReadRetried; k++ {
		s := k.String()
		assert.False(t, strings.HasPrefix(s, "event("), "kind %d has no name", uint8(k))
		assert.False(t, seen[s], "%q twice", s)
		seen[s] = true
	}
}

func TestEventString(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{Event{Kind: NodeUp, Node: "r1"}, "node-up r1"},
		{Event{Kind: SplitBrain, Detail: "writable: n0 n2"}, "split-brain: writable: n0 n2"},
		{Event{Kind: NodeDown, Node: "r1", Err: errors.New("i/o timeout")}, "node-down r1: i/o timeout"},
		{Event{Kind: Fenced, Node: "r2", Detail: "lag 4s", Count: 1}, "fenced r2: lag 4s"},
		{Event{Kind: FallbackToPrimary, Node: "p", Detail: "no replica qualified", Err: errors.New("x"), Count: 999},
			"fallback-to-primary p: no replica qualified: x (×999)"},
		{Event{Kind: ReadRetried}, "read-retried"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.e.String())
	}
}

func TestObserverFunc(t *testing.T) {
	var got []Event
	var o Observer = ObserverFunc(func(e Event) { got = append(got, e) })
	o.Observe(Event{Kind: NodeDown, Node: "a"})
	o.Observe(Event{Kind: NodeUp, Node: "a"})
	require.Len(t, got, 2)
	assert.Equal(t, NodeDown, got[0].Kind)
	assert.Equal(t, NodeUp, got[1].Kind)
}
