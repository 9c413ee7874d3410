package monitor

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newGalera is a fake three-node Galera cluster, every node Synced, node
// i at wsrep_local_index idx[i].
func newGalera(t *testing.T, idx ...int) *fakeCluster {
	f := newFakeCluster(t, len(idx))
	for i := range idx {
		f.set(i, func(r *Reading) {
			*r = Reading{Position: r.Position, GTIDs: true, Galera: &Wsrep{Ready: true, LocalState: WsrepSynced,
				RejectQueries: "NONE", ClusterStatus: "Primary", LocalIndex: idx[i]}}
		})
	}
	return f
}

// wsrep changes node i's wsrep state.
func (f *fakeCluster) wsrep(i int, change func(w *Wsrep)) {
	f.set(i, func(r *Reading) {
		w := *r.Galera
		change(&w)
		r.Galera = &w
	})
}

func TestGaleraServingStates(t *testing.T) {
	synced := Wsrep{Ready: true, LocalState: WsrepSynced, RejectQueries: "NONE", ClusterStatus: "Primary"}
	for _, c := range []struct {
		name     string
		change   func(*Wsrep)
		donor    bool
		ok, down bool
	}{
		{"synced", func(*Wsrep) {}, false, true, false},
		{"not ready", func(w *Wsrep) { w.Ready = false }, false, false, true},
		{"non-Primary", func(w *Wsrep) { w.ClusterStatus = "non-Primary" }, false, false, true},
		{"desynced", func(w *Wsrep) { w.Desync, w.LocalState = true, WsrepDonor }, false, false, false},
		{"desynced, donor allowed", func(w *Wsrep) { w.Desync, w.LocalState = true, WsrepDonor }, true, false, false},
		{"donor", func(w *Wsrep) { w.LocalState = WsrepDonor }, false, false, false},
		{"donor allowed", func(w *Wsrep) { w.LocalState = WsrepDonor }, true, true, false},
		{"joining", func(w *Wsrep) { w.LocalState = WsrepJoining }, false, false, false},
		{"joined", func(w *Wsrep) { w.LocalState = WsrepJoined }, false, false, false},
		{"rejecting", func(w *Wsrep) { w.RejectQueries = "ALL" }, false, false, false},
	} {
		w := synced
		c.change(&w)
		ok, down, why := (&GaleraOptions{Donor: c.donor}).serving(&w)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.down, down, c.name)
		assert.Equal(t, ok, why == "", "%s: a cause (%q) exactly when not serving", c.name, why)
	}
}

func TestGaleraWriterLowestIndex(t *testing.T) {
	// Node order and view order differ: the writer follows the view.
	f := newGalera(t, 2, 0, 1)
	m := New(names(3), 0, f.probe, Options{Galera: &GaleraOptions{}})
	probeAll(m)
	i, ok := m.Primary()
	assert.Equal(t, 1, i, "lowest wsrep_local_index")
	assert.True(t, ok)
	assert.False(t, m.SplitBrain(), "every node writable is no split brain")
	assert.Equal(t, []bool{false, true, false}, isPrimary(m))
	for j := range 3 {
		assert.True(t, m.Node(j).Up(), "node %d", j)
		assert.False(t, m.Node(j).Fenced(), "node %d", j)
	}

	// The writer desyncs: fenced, no writer candidate; the next lowest
	// index takes over. Back in sync, it is the writer again (failback).
	f.wsrep(1, func(w *Wsrep) { w.Desync, w.LocalState = true, WsrepDonor })
	probeAll(m)
	i, ok = m.Primary()
	assert.Equal(t, 2, i)
	assert.True(t, ok)
	assert.True(t, m.Node(1).Up())
	assert.True(t, m.Node(1).Fenced(), "a desynced node serves no reads")
	f.wsrep(1, func(w *Wsrep) { w.Desync, w.LocalState = false, WsrepSynced })
	probeAll(m)
	i, _ = m.Primary()
	assert.Equal(t, 1, i, "failback")
	assert.False(t, m.Node(1).Fenced())

	// Out of the Primary component: down; a probe error (1047) too.
	f.wsrep(1, func(w *Wsrep) { w.ClusterStatus = "non-Primary" })
	probeAll(m)
	assert.False(t, m.Node(1).Up())
	i, _ = m.Primary()
	assert.Equal(t, 2, i)
	f.wsrep(1, func(w *Wsrep) { w.ClusterStatus = "Primary" })
	f.fail(2, errors.New("Error 1047 (08S01): WSREP has not yet prepared node for application use"))
	probeAll(m)
	i, ok = m.Primary()
	assert.Equal(t, 1, i)
	assert.True(t, ok)
	assert.False(t, m.Node(2).Up())

	// No node serves: no usable writer.
	f.fail(2, nil)
	for j := range 3 {
		f.wsrep(j, func(w *Wsrep) { w.LocalState = WsrepJoined })
	}
	probeAll(m)
	_, ok = m.Primary()
	assert.False(t, ok)
}

func TestGaleraWriterPriorityAndNoFailback(t *testing.T) {
	f := newGalera(t, 0, 1, 2)
	m := New(names(3), 0, f.probe, Options{Galera: &GaleraOptions{Priority: []int{2, 1}, NoFailback: true}})
	probeAll(m)
	i, _ := m.Primary()
	assert.Equal(t, 2, i, "first of the priority list")
	f.fail(2, errors.New("down"))
	probeAll(m)
	i, _ = m.Primary()
	assert.Equal(t, 1, i, "next of the list")
	f.fail(2, nil)
	probeAll(m)
	i, ok := m.Primary()
	assert.Equal(t, 1, i, "no failback while the writer serves")
	assert.True(t, ok)

	// Without NoFailback it goes back.
	m2 := New(names(3), 0, f.probe, Options{Galera: &GaleraOptions{Priority: []int{2, 1}}})
	probeAll(m2)
	f.fail(2, errors.New("down"))
	probeAll(m2)
	f.fail(2, nil)
	probeAll(m2)
	i, _ = m2.Primary()
	assert.Equal(t, 2, i)
}

func TestGaleraRecvQueueFencesReadsOnly(t *testing.T) {
	f := newGalera(t, 0, 1, 2)
	clk := newFakeClock()
	m := New(names(3), 0, f.probe, Options{Now: clk.Now, Galera: &GaleraOptions{MaxRecvQueue: 10}})
	probeAll(m)
	emptied := clk.Now()
	clk.Advance(300 * time.Millisecond)
	f.wsrep(0, func(w *Wsrep) { w.RecvQueue = 11 })
	f.wsrep(1, func(w *Wsrep) { w.RecvQueue = 11 })
	f.wsrep(2, func(w *Wsrep) { w.RecvQueue = 10 })
	probeAll(m)
	assert.True(t, m.Node(1).Fenced())
	_, known := m.Node(1).Lag()
	assert.False(t, known, "fenced by its queue: lag unknown")
	assert.False(t, m.Node(2).Fenced(), "at the limit")
	lag, known := m.Node(2).Lag()
	assert.True(t, known, "a queue to apply: as of the last empty queue")
	assert.Equal(t, 300*time.Millisecond, lag)
	asOf, _ := m.Node(2).DataAsOf()
	assert.True(t, asOf.Equal(emptied), "data as of the last empty queue: %v, want %v", asOf, emptied)
	i, ok := m.Primary()
	require.Equal(t, 0, i, "a queue does not move the writer")
	assert.True(t, ok)
	f.wsrep(1, func(w *Wsrep) { w.RecvQueue = 0 })
	probeAll(m)
	assert.False(t, m.Node(1).Fenced())
	lag, known = m.Node(1).Lag()
	assert.True(t, known)
	assert.Zero(t, lag)
}

func TestGaleraMaxWriters(t *testing.T) {
	f := newGalera(t, 1, 2, 0)
	m := New(names(3), 0, f.probe, Options{Galera: &GaleraOptions{MaxWriters: 2}})
	probeAll(m)
	i, ok := m.Primary()
	assert.Equal(t, 2, i, "the writer: lowest index")
	assert.True(t, ok)
	assert.Equal(t, []bool{true, false, true}, isPrimary(m), "the two lowest indexes write")
	f.wsrep(0, func(w *Wsrep) { w.Desync = true })
	probeAll(m)
	assert.Equal(t, []bool{false, true, true}, isPrimary(m), "the next node replaces a desynced writer")
	f.fail(2, errors.New("down"))
	probeAll(m)
	i, _ = m.Primary()
	assert.Equal(t, 1, i)
	assert.Equal(t, []bool{false, true, false}, isPrimary(m), "one serving node: one writer")
	f.fail(2, nil)
	f.wsrep(0, func(w *Wsrep) { w.Desync = false })
	probeAll(m)
	i, _ = m.Primary()
	assert.Equal(t, 2, i)
	assert.Equal(t, []bool{true, false, true}, isPrimary(m))
	assert.False(t, m.SplitBrain())
}
