package monitor

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rwshard/rwshard/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drain reads what an aggregator has queued.
func drain(a *aggregator) []health.Event {
	var out []health.Event
	for {
		select {
		case e := <-a.out:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestAggregatorFirstOccurrence(t *testing.T) {
	clk := newFakeClock()
	a := newAggregator(10*time.Second, clk.Now)
	a.emit(health.Event{Kind: health.NodeDown, Node: "r1", Code: 2013, Count: 42})
	got := drain(a)
	require.Len(t, got, 1, "delivered at once")
	assert.Equal(t, 1, got[0].Count, "a first occurrence has Count 1, whatever the caller set")
	assert.WithinDuration(t, clk.Now(), got[0].Time, 0, "stamped with the clock")

	at := clk.Now().Add(-time.Minute)
	a.emit(health.Event{Kind: health.NodeUp, Node: "r1", Time: at})
	got = drain(a)
	require.Len(t, got, 1)
	assert.WithinDuration(t, at, got[0].Time, 0, "a time set by the caller is kept")
}

func TestAggregatorKeys(t *testing.T) {
	clk := newFakeClock()
	a := newAggregator(10*time.Second, clk.Now)
	distinct := []health.Event{
		{Kind: health.FallbackToPrimary, Node: "p"},
		{Kind: health.FallbackToPrimary, Node: "q"},          // other node
		{Kind: health.FallbackToPrimary, Node: "p", Code: 1}, // other code
		{Kind: health.ReadRetried, Node: "p"},                // other kind
		{Kind: health.ReadRetried},                           // no node
	}
	for _, e := range distinct {
		a.emit(e)
	}
	assert.Len(t, drain(a), len(distinct), "different kinds, nodes or codes are not folded")

	// Detail and Err are not part of the key.
	for _, e := range distinct {
		e.Detail, e.Err = "other detail", errors.New("other error")
		a.emit(e)
	}
	assert.Empty(t, drain(a), "repeats within the window are folded")
}

func TestAggregatorWindow(t *testing.T) {
	const window = 10 * time.Second
	clk := newFakeClock()
	a := newAggregator(window, clk.Now)
	start := clk.Now()
	e := health.Event{Kind: health.FallbackToPrimary, Node: "p", Detail: "no replica qualified"}

	a.emit(e)
	require.Len(t, drain(a), 1)
	for i := range 1000 - 1 {
		if i == 500 {
			clk.Advance(window - time.Nanosecond) // still within the window
		}
		a.emit(e)
	}
	a.flush()
	assert.Empty(t, drain(a), "no delivery before the window ends")

	clk.Advance(time.Nanosecond)
	a.flush()
	got := drain(a)
	require.Len(t, got, 1, "one summary at the end of the window")
	s := got[0]
	assert.Equal(t, health.FallbackToPrimary, s.Kind)
	assert.Equal(t, "p", s.Node)
	assert.Equal(t, 999, s.Count, "the first of 1000 was delivered: 999 repeats")
	assert.Equal(t, fmt.Sprintf("repeated 999 more times since %s", start.Format(time.RFC3339)), s.Detail)
	assert.Contains(t, s.String(), "(×999)")

	a.flush()
	assert.Empty(t, drain(a), "a summary is delivered once")

	// The window ended: the next occurrence is a first occurrence again.
	a.emit(e)
	got = drain(a)
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].Count)
	assert.Equal(t, "no replica qualified", got[0].Detail)
}

func TestAggregatorNoRepeatsNoSummary(t *testing.T) {
	clk := newFakeClock()
	a := newAggregator(time.Second, clk.Now)
	a.emit(health.Event{Kind: health.NodeDown, Node: "r"})
	clk.Advance(time.Hour)
	a.flush()
	assert.Len(t, drain(a), 1, "only the first occurrence")
}

// Without a flush (the monitor not started), the next occurrence after the
// window delivers the summary first.
func TestAggregatorSummaryOnNextEmit(t *testing.T) {
	clk := newFakeClock()
	a := newAggregator(time.Second, clk.Now)
	e := health.Event{Kind: health.ReadRetried, Node: "r"}
	for range 3 {
		a.emit(e)
	}
	clk.Advance(time.Second)
	a.emit(e)
	got := drain(a)
	require.Len(t, got, 3)
	assert.Equal(t, 1, got[0].Count)
	assert.Equal(t, 2, got[1].Count)
	assert.Contains(t, got[1].Detail, "repeated 2 more times")
	assert.Equal(t, 1, got[2].Count)
}

// Through the monitor: Emit folds, and node 0's loop flushes every interval.
func TestMonitorEmitAggregates(t *testing.T) {
	clk := newFakeClock()
	rec := &recorder{}
	m := New(names(1), 0, newFakeCluster(t, 1).probe,
		Options{Interval: 10 * time.Millisecond, Window: 10 * time.Second, Now: clk.Now, Observer: rec})
	m.Start()
	<-m.Ready()
	defer m.Close()
	start := clk.Now()
	cause := errors.New("no replica")
	for range 1000 {
		m.Emit(health.Event{Kind: health.FallbackToPrimary, Node: "n0", Err: cause})
	}
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, eventually, tick)
	time.Sleep(50 * time.Millisecond) // five flushes, within the (fake) window
	got := rec.all()
	require.Len(t, got, 1, "repeats are not delivered within the window")
	assert.Equal(t, 1, got[0].Count)
	assert.ErrorIs(t, got[0].Err, cause)
	assert.WithinDuration(t, start, got[0].Time, 0)

	clk.Advance(10 * time.Second)
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, eventually, tick)
	s := rec.all()[1]
	assert.Equal(t, health.FallbackToPrimary, s.Kind)
	assert.Equal(t, 999, s.Count)
	assert.Contains(t, s.Detail, "repeated 999 more times")
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, rec.all(), 2, "one summary")

	// Another node is another key.
	m.Emit(health.Event{Kind: health.FallbackToPrimary, Node: "n1"})
	require.Eventually(t, func() bool { return len(rec.all()) == 3 }, eventually, tick)
}

// A blocked observer blocks neither Emit nor the probes: the queue fills,
// later events are dropped and counted.
func TestBlockedObserver(t *testing.T) {
	received := make(chan health.Event, 1)
	release := make(chan struct{})
	var delivered []health.Event
	o := health.ObserverFunc(func(e health.Event) {
		delivered = append(delivered, e) // only the delivery goroutine writes
		select {
		case received <- e:
		default:
		}
		<-release
	})
	m := New(names(1), 0, newFakeCluster(t, 1).probe, Options{Interval: 10 * time.Millisecond, Observer: o})
	m.Start()
	<-m.Ready()

	m.Emit(health.Event{Kind: health.ReadRetried, Node: "first"})
	select {
	case <-received: // the observer now holds it and blocks
	case <-time.After(eventually):
		t.Fatal("first event not delivered")
	}
	const n = 300 // distinct nodes: not folded
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			m.Emit(health.Event{Kind: health.ReadRetried, Node: fmt.Sprint("r", i)})
		}
	}()
	select {
	case <-done:
	case <-time.After(eventually):
		t.Fatal("Emit blocked on a slow observer")
	}
	queue := cap(m.agg.out)
	m.agg.mu.Lock()
	dropped := m.agg.dropped
	m.agg.mu.Unlock()
	assert.Equal(t, n-queue, dropped, "what does not fit in the queue (%d) is dropped and counted", queue)

	close(release)
	m.Close() // delivers what was queued, then returns
	require.Len(t, delivered, 1+queue)
	assert.Equal(t, "first", delivered[0].Node)
	assert.Equal(t, "r0", delivered[1].Node, "in order")
	assert.Equal(t, fmt.Sprint("r", queue-1), delivered[queue].Node)
}

func TestEmitAfterCloseNotDelivered(t *testing.T) {
	clk := newFakeClock()
	a := newAggregator(time.Second, clk.Now)
	a.close()
	a.close()
	assert.NotPanics(t, func() { a.emit(health.Event{Kind: health.NodeDown}) })
	assert.NotPanics(t, a.flush)
	_, open := <-a.out
	assert.False(t, open, "nothing queued after close")
	assert.Zero(t, a.dropped, "not counted as dropped either")
}
