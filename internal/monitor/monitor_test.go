package monitor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/rwshard/rwshard/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Most tests here drive the monitor by hand: they do not Start it, but call
// probeOnce for the nodes in the order they choose, with a fake clock, and
// read the events queued for delivery. That makes the lag arithmetic and
// the role changes deterministic. The tests that Start it check the
// goroutines: schedule, Kick, Beat, Close.

func names(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("n%d", i)
	}
	return s
}

func probeAll(m *Monitor) {
	for i := range m.nodes {
		m.probeOnce(i)
	}
}

func seq(t testing.TB, n int) GTIDSet { return mustGTID(t, fmt.Sprintf("0-1-%d", n)) }

// asReplica and asPrimary rewrite a reading as a healthy replica or a
// writable primary at the same position.
func asReplica(r *Reading) {
	*r = Reading{ReadOnly: true, Replica: true, IORunning: true, SQLRunning: true, Position: r.Position}
}

func asPrimary(r *Reading) { *r = Reading{Position: r.Position} }

func TestOptionsDefaults(t *testing.T) {
	m := New(names(1), 0, newFakeCluster(t, 1).probe, Options{})
	assert.Equal(t, time.Second, m.opts.Interval)
	assert.Equal(t, 500*time.Millisecond, m.opts.Timeout)
	assert.Equal(t, 3, m.opts.FailAfter)
	assert.Equal(t, 10*time.Second, m.opts.Window)
	assert.Zero(t, m.opts.MaxLag, "no lag limit by default")
	require.NotNil(t, m.opts.Now)

	o := Options{Interval: 7 * time.Millisecond, Timeout: time.Millisecond, FailAfter: 9, Window: time.Minute, MaxLag: time.Hour}
	m = New(names(1), 0, newFakeCluster(t, 1).probe, o)
	assert.Equal(t, 7*time.Millisecond, m.opts.Interval)
	assert.Equal(t, time.Millisecond, m.opts.Timeout)
	assert.Equal(t, 9, m.opts.FailAfter)
	assert.Equal(t, time.Minute, m.opts.Window)
	assert.Equal(t, time.Hour, m.opts.MaxLag)
}

func TestNewInitialState(t *testing.T) {
	m := New(names(3), 1, newFakeCluster(t, 3).probe, Options{})
	i, ok := m.Primary()
	assert.Equal(t, 1, i)
	assert.True(t, ok, "the configured primary is taken as usable until probed")
	assert.False(t, m.SplitBrain())
	for i := range 3 {
		n := m.Node(i)
		assert.Equal(t, fmt.Sprintf("n%d", i), n.Name)
		assert.True(t, n.Up(), "nodes start up")
		assert.False(t, n.Fenced(), "nodes start unfenced")
		assert.False(t, n.Probed())
		assert.Equal(t, i == 1, n.Writable())
		_, known := n.Lag()
		assert.False(t, known, "lag starts unknown")
		_, known = n.DataAsOf()
		assert.False(t, known, "data horizon starts unknown")
		assert.True(t, n.Position().IsZero())
	}
	assert.False(t, isClosed(m.Changed()))
}

func TestProbeReadsIntoNode(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	f.set(0, func(r *Reading) { r.Position = seq(t, 42) })
	m := New(names(2), 0, f.probe, Options{Now: clk.Now})
	probeAll(m)
	p, r := m.Node(0), m.Node(1)
	assert.True(t, p.Probed())
	assert.True(t, p.Writable())
	assert.Equal(t, "0-1-42", p.Position().String())
	lag, ok := p.Lag()
	assert.True(t, ok)
	assert.Zero(t, lag, "the primary does not lag")
	asOf, ok := p.DataAsOf()
	assert.True(t, ok)
	assert.WithinDuration(t, clk.Now(), asOf, 0, "the primary has its data as of the probe")

	assert.True(t, r.Probed())
	assert.False(t, r.Writable(), "a replica is not writable")
	assert.Equal(t, "0-1-1", r.Position().String())
	assert.Empty(t, queued(m), "a healthy cluster raises no events")
}

func TestProbeErrorTakesNodeDownAndBack(t *testing.T) {
	f := newFakeCluster(t, 2)
	rec := &recorder{}
	m := New(names(2), 0, f.probe, Options{Interval: 10 * time.Millisecond, Observer: rec})
	m.Start()
	<-m.Ready()
	defer m.Close()
	require.True(t, m.Node(1).Up())

	cause := &mysql.MySQLError{Number: 2013, Message: "Lost connection to server during query"}
	f.fail(1, cause)
	require.Eventually(t, func() bool { return !m.Node(1).Up() }, eventually, tick)
	require.Eventually(t, func() bool { return rec.count(health.NodeDown, "n1") == 1 }, eventually, tick)
	down := filter(rec.all(), health.NodeDown, "n1")[0]
	assert.ErrorIs(t, down.Err, cause)
	assert.Equal(t, uint16(2013), down.Code, "the MySQL error number is the event's code")
	assert.Equal(t, 1, down.Count)
	assert.False(t, down.Time.IsZero())
	assert.True(t, m.Node(0).Up(), "the other node is not affected")

	f.fail(1, nil)
	require.Eventually(t, func() bool { return m.Node(1).Up() }, eventually, tick)
	require.Eventually(t, func() bool { return rec.count(health.NodeUp, "n1") == 1 }, eventually, tick)
	assert.Equal(t, 1, rec.count(health.NodeDown, "n1"), "one event per transition, not one per failed probe")
	assert.Zero(t, rec.count(health.NodeDown, "n0"))
}

func TestPrimaryDownAndBack(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{})
	probeAll(m)
	ch := m.Changed()

	f.fail(0, errors.New("connection refused"))
	m.probeOnce(0)
	i, ok := m.Primary()
	assert.Equal(t, 0, i)
	assert.False(t, ok, "a down primary is not usable")
	assert.True(t, isClosed(ch), "the primary going down closes Changed")
	down := filter(queued(m), health.NodeDown, "n0")
	require.Len(t, down, 1)
	assert.EqualError(t, down[0].Err, "connection refused")
	assert.Zero(t, down[0].Code, "no MySQL error number")

	ch = m.Changed()
	f.fail(0, nil)
	m.probeOnce(0)
	_, ok = m.Primary()
	assert.True(t, ok)
	assert.True(t, isClosed(ch), "the primary coming back closes Changed")
	assert.Len(t, filter(queued(m), health.NodeUp, "n0"), 1)
}

// startIdle starts a monitor whose loops, after the probes of Start, stay
// idle: an interval of an hour and a clock that only the test moves (a kick
// is honoured only a tenth of an interval after the last probe). The test
// probes by hand with probeOnce; events go to the returned recorder.
func startIdle(t *testing.T, f *fakeCluster, n int, o Options) (*Monitor, *fakeClock, *recorder) {
	t.Helper()
	clk := newFakeClock()
	rec := &recorder{}
	o.Interval, o.Now, o.Observer = time.Hour, clk.Now, rec
	m := New(names(n), 0, f.probe, o)
	m.Start()
	<-m.Ready()
	t.Cleanup(m.Close)
	return m, clk, rec
}

func TestFailureThreshold(t *testing.T) {
	f := newFakeCluster(t, 2)
	m, _, rec := startIdle(t, f, 2, Options{FailAfter: 3})
	n := m.Node(1)
	cause := &mysql.MySQLError{Number: 2006, Message: "MySQL server has gone away"}

	m.Failure(1, cause)
	m.Failure(1, cause)
	assert.True(t, n.Up(), "FailAfter-1 failures keep the node in")
	n.Success()
	m.Failure(1, cause)
	m.Failure(1, cause)
	assert.True(t, n.Up(), "Success reset the count: only 2 in a row")

	m.Failure(1, cause)
	assert.False(t, n.Up(), "FailAfter failures in a row take the node out")
	m.Failure(1, cause)
	assert.False(t, n.Up())

	// Out until a probe answers.
	n.Success()
	assert.False(t, n.Up(), "a statement's success does not bring the node back, a probe does")
	m.probeOnce(1)
	assert.True(t, n.Up())

	// Events are delivered in order: once NodeUp is in, every NodeDown
	// raised before it is too.
	require.Eventually(t, func() bool { return rec.count(health.NodeUp, "n1") == 1 }, eventually, tick)
	down := filter(rec.all(), health.NodeDown, "n1")
	require.Len(t, down, 1, "one event for the transition, none for the failures after it")
	assert.ErrorIs(t, down[0].Err, cause)
	assert.Equal(t, uint16(2006), down[0].Code)

	// The probe reset the count as well.
	m.Failure(1, cause)
	m.Failure(1, cause)
	assert.True(t, n.Up())
}

// Without probes nothing could bring a node back: a monitor that is not
// running ignores traffic failures.
func TestFailureIgnoredWithoutProbes(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{FailAfter: 1})
	m.Failure(1, errors.New("before Start"))
	assert.True(t, m.Node(1).Up(), "not started")
	m.Start()
	<-m.Ready()
	m.Close()
	m.Failure(1, errors.New("after Close"))
	assert.True(t, m.Node(1).Up(), "closed")
}

func TestFailureOfPrimary(t *testing.T) {
	f := newFakeCluster(t, 2)
	m, _, _ := startIdle(t, f, 2, Options{FailAfter: 1})
	ch := m.Changed()
	m.Failure(0, errors.New("broken pipe"))
	_, ok := m.Primary()
	assert.False(t, ok)
	assert.True(t, isClosed(ch), "writes waiting for the primary are told")
}

func TestFailureKicksProbe(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	rec := &recorder{}
	m := New(names(2), 0, f.probe, Options{Interval: time.Hour, FailAfter: 2, Now: clk.Now, Observer: rec})
	m.Start()
	<-m.Ready()
	defer m.Close()
	require.Equal(t, 1, f.callCount(1))

	clk.waitLoops(t, 2)
	clk.Advance(10 * time.Minute) // past the kick rate limit (Interval/10)

	cause := errors.New("i/o timeout")
	m.Failure(1, cause)
	m.Failure(1, cause)
	// The node is out, the probes are kicked, the probe answers: back in.
	require.Eventually(t, func() bool { return f.callCount(1) == 2 && m.Node(1).Up() }, eventually, tick)
	require.Eventually(t, func() bool { return rec.count(health.NodeUp, "n1") == 1 }, eventually, tick)
	assert.Equal(t, 1, rec.count(health.NodeDown, "n1"))
}

func TestReplicationStopped(t *testing.T) {
	for _, tt := range []struct {
		name                string
		io, connecting, sql bool
		maxLag              time.Duration
	}{
		{"io stopped", false, false, true, 10 * time.Second},
		{"sql stopped", true, false, false, 10 * time.Second},
		{"both stopped", false, false, false, 10 * time.Second},
		{"io stopped, no lag limit", false, false, true, 0},
		{"sql stopped, no lag limit", true, false, false, 0},
		{"io connecting, sql stopped", false, true, false, 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			f := newFakeCluster(t, 2)
			m := New(names(2), 0, f.probe, Options{Now: clk.Now, MaxLag: tt.maxLag})
			probeAll(m)
			r := m.Node(1)
			require.False(t, r.Fenced())

			clk.Advance(time.Second)
			f.set(1, func(r *Reading) {
				// Seconds_Behind_Master may well read 0 and the position
				// match the primary's: neither makes it lag 0.
				r.IORunning, r.IOConnecting, r.SQLRunning, r.SecondsBehind = tt.io, tt.connecting, tt.sql, 0
			})
			probeAll(m)
			assert.True(t, r.Fenced(), "a stopped replication thread fences the replica")
			assert.True(t, r.Up(), "it answers probes: up, but fenced")
			lag, known := r.Lag()
			assert.True(t, known)
			assert.Equal(t, time.Duration(math.MaxInt64), lag, "lag reads as huge, never 0")
			_, known = r.DataAsOf()
			assert.False(t, known, "data horizon unknown")
			fenced := filter(queued(m), health.Fenced, "n1")
			require.Len(t, fenced, 1)
			assert.Equal(t, "replication stopped", fenced[0].Detail)

			probeAll(m)
			assert.Empty(t, filter(queued(m), health.Fenced, "n1"), "one event per transition")

			clk.Advance(time.Second)
			f.set(1, func(r *Reading) { r.IORunning, r.IOConnecting, r.SQLRunning = true, false, true })
			probeAll(m)
			assert.False(t, r.Fenced(), "running again and caught up: unfenced")
			lag, known = r.Lag()
			assert.True(t, known)
			assert.Zero(t, lag)
			_, known = r.DataAsOf()
			assert.True(t, known)
			assert.Len(t, filter(queued(m), health.Unfenced, "n1"), 1)
		})
	}
}

// An IO thread that is reconnecting (the primary is away) is not a fence by
// itself: the replica has what the primary had when last reached, and the
// GTID samples say how old that is.
func TestIOConnectingNotFenced(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Now: clk.Now, MaxLag: 3 * time.Second})
	probeAll(m)
	last := clk.Now()

	clk.Advance(time.Second)
	f.fail(0, errors.New("connection refused"))
	f.set(1, func(r *Reading) { r.IORunning, r.IOConnecting, r.SecondsBehind = false, true, -1 })
	probeAll(m)
	r := m.Node(1)
	assert.False(t, r.Fenced())
	lag, ok := r.Lag()
	require.True(t, ok)
	assert.Zero(t, lag, "it has every sample the primary gave")
	asOf, ok := r.DataAsOf()
	require.True(t, ok)
	assert.WithinDuration(t, last, asOf, 0, "data as of the primary's last answer")

	// Still reconnecting, but behind the primary's last sample: the GTID lag
	// fences it once over the limit.
	f.fail(0, nil)
	for range 6 {
		clk.Advance(time.Second)
		f.set(0, func(r *Reading) { r.Position = seq(t, int(r.Position.maria[0])+1) })
		probeAll(m)
	}
	assert.True(t, r.Fenced())
	assert.Empty(t, filter(queued(m), health.NodeDown, "n1"))
}

// The delayed (or stuck) replica: Seconds_Behind_Master reads 0, but its
// GTID position stays behind the primary's samples.
func TestGTIDLagDelayedReplica(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	const maxLag = 3 * time.Second
	m := New(names(2), 0, f.probe, Options{MaxLag: maxLag, Now: clk.Now})
	r := m.Node(1)
	// at[k] is the time of the k-th round; the primary is at seq 10+k.
	var at []time.Time
	round := func(primarySeq, replicaSeq int) {
		at = append(at, clk.Now())
		f.set(0, func(x *Reading) { x.Position = seq(t, primarySeq) })
		f.set(1, func(x *Reading) { x.Position = seq(t, replicaSeq); x.SecondsBehind = 0 })
		m.probeOnce(0)
		m.probeOnce(1)
	}
	lagOf := func() time.Duration {
		t.Helper()
		lag, ok := r.Lag()
		require.True(t, ok, "lag known")
		return lag
	}
	asOfOf := func() time.Time {
		t.Helper()
		asOf, ok := r.DataAsOf()
		require.True(t, ok, "data horizon known")
		return asOf
	}

	round(10, 10)
	assert.Zero(t, lagOf())
	assert.WithinDuration(t, at[0], asOfOf(), 0)
	assert.False(t, r.Fenced())

	// The primary moves on every second; the replica stays at 10. It lags
	// by the age of the oldest primary sample it has not applied: that
	// sample is round 1's, so the lag is (k-1)s at round k.
	prev := time.Duration(-1)
	for k := 1; k <= 6; k++ {
		clk.Advance(time.Second)
		round(10+k, 10)
		lag := lagOf()
		assert.Equal(t, time.Duration(k-1)*time.Second, lag, "round %d", k)
		assert.Greater(t, lag, prev, "round %d: the lag grows", k)
		prev = lag
		assert.Equal(t, lag > maxLag, r.Fenced(), "round %d: lag %s, limit %s", k, lag, maxLag)
		assert.WithinDuration(t, at[0], asOfOf(), 0, "round %d: data as of round 0", k)
	}
	require.True(t, r.Fenced(), "fenced with Seconds_Behind_Master = 0")
	fenced := filter(queued(m), health.Fenced, "n1")
	require.Len(t, fenced, 1)
	assert.Equal(t, "lag 4s", fenced[0].Detail)

	// It applies up to seq 12 (round 2's sample): data as of round 2, lag
	// from round 3.
	clk.Advance(time.Second)
	round(17, 12)
	assert.WithinDuration(t, at[2], asOfOf(), 0, "the data horizon moves forward")
	assert.Equal(t, at[7].Sub(at[3]), lagOf())
	assert.True(t, r.Fenced())

	// Caught up (the primary is idle at 17).
	clk.Advance(time.Second)
	round(17, 17)
	assert.Zero(t, lagOf())
	assert.WithinDuration(t, at[8], asOfOf(), 0)
	assert.False(t, r.Fenced())
	evs := queued(m)
	assert.Len(t, filter(evs, health.Unfenced, "n1"), 1)
	assert.Empty(t, filter(evs, health.Fenced, "n1"))
}

// Samples older than maxSamples primary probes are forgotten: a replica
// behind all of them lags by the age of the oldest one kept.
func TestGTIDLagHistoryBounded(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Now: clk.Now})
	f.set(1, func(r *Reading) { r.Position = seq(t, 1) })
	const rounds = maxSamples + 10
	for k := range rounds {
		f.set(0, func(r *Reading) { r.Position = seq(t, 2+k) })
		probeAll(m)
		clk.Advance(time.Second)
	}
	m.mu.Lock()
	n := len(m.samples)
	m.mu.Unlock()
	assert.Equal(t, maxSamples, n)
	lag, ok := m.Node(1).Lag()
	require.True(t, ok)
	assert.Equal(t, time.Duration(maxSamples-1)*time.Second, lag)
	assert.False(t, m.Node(1).Fenced(), "no lag limit set")
}

func TestSecondsBehindRaisesLag(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Now: clk.Now, MaxLag: 5 * time.Second})
	r := m.Node(1)

	// GTID says caught up with the primary's newest sample, 3s old:
	// Seconds_Behind_Master raises the estimate up to that age, and no
	// further (after an idle spell it reads the time since the last
	// event, not staleness).
	probeAll(m)
	clk.Advance(3 * time.Second)
	f.set(1, func(r *Reading) { r.SecondsBehind = 2 })
	m.probeOnce(1)
	lag, ok := r.Lag()
	require.True(t, ok)
	assert.Equal(t, 2*time.Second, lag)
	f.set(1, func(r *Reading) { r.SecondsBehind = 52 })
	m.probeOnce(1)
	lag, ok = r.Lag()
	require.True(t, ok)
	assert.Equal(t, 3*time.Second, lag)
	assert.False(t, r.Fenced(), "the samples prove the data 3s old")

	// Behind the newest sample, and as of one 10s old: Seconds_Behind_Master
	// raises the estimate to its 7s.
	clk.Advance(7 * time.Second)
	f.set(0, func(r *Reading) { r.Position = seq(t, 9) })
	f.set(1, func(r *Reading) { r.SecondsBehind = 7 })
	probeAll(m)
	lag, ok = r.Lag()
	require.True(t, ok)
	assert.Equal(t, 7*time.Second, lag)
	assert.True(t, r.Fenced())
	f.set(1, func(r *Reading) { r.Position = seq(t, 9) })

	// NULL does not lower the GTID figure.
	f.set(1, func(r *Reading) { r.SecondsBehind = -1 })
	probeAll(m)
	lag, ok = r.Lag()
	require.True(t, ok)
	assert.Zero(t, lag)
	assert.False(t, r.Fenced())

	// Without GTIDs, Seconds_Behind_Master alone; the data horizon rounds
	// its whole seconds up.
	f.set(0, func(r *Reading) { r.Position = GTIDSet{} })
	f.set(1, func(r *Reading) { r.Position, r.SecondsBehind = GTIDSet{}, 2 })
	clk.Advance(time.Minute)
	probeAll(m)
	lag, ok = r.Lag()
	require.True(t, ok)
	assert.Equal(t, 2*time.Second, lag)
	asOf, ok := r.DataAsOf()
	require.True(t, ok)
	assert.WithinDuration(t, clk.Now().Add(-3*time.Second), asOf, 0)
}

func TestHeartbeatRaisesLag(t *testing.T) {
	t.Run("no GTID", func(t *testing.T) {
		clk := newFakeClock()
		f := newFakeCluster(t, 2)
		m := New(names(2), 0, f.probe, Options{Now: clk.Now, MaxLag: 3 * time.Second})
		f.set(0, func(r *Reading) { r.Position = GTIDSet{} })
		f.set(1, func(r *Reading) {
			r.Position, r.SecondsBehind, r.Heartbeat = GTIDSet{}, 0, clk.Now().Add(-5*time.Second)
		})
		probeAll(m)
		lag, ok := m.Node(1).Lag()
		require.True(t, ok)
		assert.GreaterOrEqual(t, lag, 5*time.Second)
		asOf, ok := m.Node(1).DataAsOf()
		require.True(t, ok)
		assert.False(t, asOf.After(clk.Now().Add(-5*time.Second)), "no data newer than the heartbeat: %s", asOf)
		assert.True(t, m.Node(1).Fenced())
	})
	t.Run("GTID caught up", func(t *testing.T) {
		clk := newFakeClock()
		f := newFakeCluster(t, 2)
		m := New(names(2), 0, f.probe, Options{Now: clk.Now})
		f.set(1, func(r *Reading) { r.Heartbeat = clk.Now().Add(-5 * time.Second) })
		probeAll(m)
		lag, ok := m.Node(1).Lag()
		require.True(t, ok)
		assert.GreaterOrEqual(t, lag, 5*time.Second, "the heartbeat can only raise the estimate")
	})
	t.Run("fresh heartbeat", func(t *testing.T) {
		clk := newFakeClock()
		f := newFakeCluster(t, 2)
		m := New(names(2), 0, f.probe, Options{Now: clk.Now})
		f.set(1, func(r *Reading) { r.Heartbeat = clk.Now() })
		probeAll(m)
		lag, ok := m.Node(1).Lag()
		require.True(t, ok)
		assert.Zero(t, lag)
	})
}

func TestLagUnknown(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Now: clk.Now})
	// No position, Seconds_Behind_Master NULL, no heartbeat: nothing to go by.
	f.set(1, func(r *Reading) { r.Position, r.SecondsBehind = GTIDSet{}, -1 })
	probeAll(m)
	_, ok := m.Node(1).Lag()
	assert.False(t, ok)
	_, ok = m.Node(1).DataAsOf()
	assert.False(t, ok)
	assert.True(t, m.Node(1).Up())
}

func TestSwitchoverFollowed(t *testing.T) {
	f := newFakeCluster(t, 3)
	m := New(names(3), 0, f.probe, Options{})
	probeAll(m)
	i, ok := m.Primary()
	require.Equal(t, 0, i)
	require.True(t, ok)
	assert.Equal(t, []bool{true, false, false}, isPrimary(m), "IsPrimary as PrimaryIndex")
	ch := m.Changed()

	// The tooling promotes n1 and makes n0 replicate from it.
	f.set(0, asReplica)
	f.set(1, asPrimary)
	for range 3 {
		probeAll(m)
	}
	i, ok = m.Primary()
	assert.Equal(t, 1, i)
	assert.True(t, ok)
	assert.False(t, m.SplitBrain())
	assert.Equal(t, []bool{false, true, false}, isPrimary(m), "IsPrimary follows the switchover")
	assert.True(t, isClosed(ch), "the switchover closes Changed")
	assert.False(t, m.Node(0).Writable())
	assert.True(t, m.Node(1).Writable())
	sw := filter(queued(m), health.SwitchoverFollowed, "n1")
	require.Len(t, sw, 1, "one event for one switchover")
	assert.Equal(t, "was n0", sw[0].Detail)

	// The new primary's lag is 0; the old one is measured against the new
	// primary's samples.
	lag, ok := m.Node(1).Lag()
	assert.True(t, ok)
	assert.Zero(t, lag)
	_, ok = m.Node(0).Lag()
	assert.True(t, ok)
}

// isPrimary is every node's IsPrimary, in order.
func isPrimary(m *Monitor) []bool {
	var out []bool
	for i := range m.nodes {
		out = append(out, m.Node(i).IsPrimary())
	}
	return out
}

func TestNoWritableNode(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{})
	probeAll(m)
	f.set(0, func(r *Reading) { r.ReadOnly = true })
	probeAll(m)
	i, ok := m.Primary()
	assert.Equal(t, 0, i, "the primary stays where it was")
	assert.Equal(t, []bool{true, false}, isPrimary(m), "IsPrimary, usable or not")
	assert.False(t, ok, "no writable node: no usable primary")
	assert.False(t, m.SplitBrain())
	assert.True(t, m.Node(0).Up())
	assert.Empty(t, filter(queued(m), health.SwitchoverFollowed, "n1"))
}

func TestSplitBrain(t *testing.T) {
	f := newFakeCluster(t, 3)
	m := New(names(3), 0, f.probe, Options{})
	probeAll(m)
	ch := m.Changed()

	f.set(2, asPrimary)
	for range 3 {
		probeAll(m)
	}
	assert.True(t, m.SplitBrain())
	i, ok := m.Primary()
	assert.Equal(t, 0, i, "no guess: the primary is not switched")
	assert.False(t, ok, "split brain: writes refused")
	assert.True(t, isClosed(ch))
	split := filter(queued(m), health.SplitBrain, "")
	require.Len(t, split, 1, "one event while it lasts")
	assert.Equal(t, "writable: n0 n2", split[0].Detail)

	// Resolved by demoting n2.
	ch = m.Changed()
	f.set(2, asReplica)
	probeAll(m)
	assert.False(t, m.SplitBrain())
	i, ok = m.Primary()
	assert.Equal(t, 0, i)
	assert.True(t, ok)
	assert.True(t, isClosed(ch))

	// Resolved by demoting the old primary instead: n2 is followed.
	f.set(2, asPrimary)
	probeAll(m)
	require.True(t, m.SplitBrain())
	f.set(0, asReplica)
	probeAll(m)
	assert.False(t, m.SplitBrain())
	i, ok = m.Primary()
	assert.Equal(t, 2, i)
	assert.True(t, ok)
}

func TestSplitBrainDownNodeNotCounted(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{})
	probeAll(m)
	// n1 was promoted while n0 went away: n0's last reading said
	// writable, but it is down, so n1 is the only writable node.
	f.fail(0, errors.New("no route to host"))
	f.set(1, asPrimary)
	probeAll(m)
	assert.False(t, m.SplitBrain())
	i, ok := m.Primary()
	assert.Equal(t, 1, i)
	assert.True(t, ok)
}

func TestReadOnlyRejection(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{})
	probeAll(m)
	ch := m.Changed()
	m.ReadOnly(0)
	assert.False(t, m.Node(0).Writable(), "not writable at once, before any probe")
	_, ok := m.Primary()
	assert.False(t, ok)
	assert.True(t, isClosed(ch))
	for i := range m.kick {
		assert.Len(t, m.kick[i], 1, "node %d's probe is kicked", i)
	}
}

// Changed closes at every change of Primary's answer, including the
// primary turning read-only or writable again as probed (e.g. after
// ReadOnly(i) on a transient rejection): otherwise a write waiting in
// waitPrimary sleeps out the whole write pause. (Failed at 8b7a351, where
// only setUp and the split-brain and switchover branches closed it.)
func TestChangedOnPrimaryWritability(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{})
	probeAll(m)

	ch := m.Changed()
	f.set(0, func(r *Reading) { r.ReadOnly = true })
	m.probeOnce(0)
	_, ok := m.Primary()
	require.False(t, ok)
	assert.True(t, isClosed(ch), "primary became read-only: Changed must close")

	ch = m.Changed()
	f.set(0, func(r *Reading) { r.ReadOnly = false })
	m.probeOnce(0)
	_, ok = m.Primary()
	require.True(t, ok)
	assert.True(t, isClosed(ch), "primary writable again: Changed must close")

	// The read-only rejection that turns out to be a false alarm.
	m.ReadOnly(0)
	ch = m.Changed()
	m.probeOnce(0)
	_, ok = m.Primary()
	require.True(t, ok)
	assert.True(t, isClosed(ch), "primary writable again after ReadOnly: Changed must close")
}

// The operator is told when writes lose their primary and when they have
// one again. (Failed at 8b7a351, where neither kind was ever emitted.)
func TestPrimaryLostAndFoundEvents(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Now: clk.Now})
	probeAll(m)
	f.set(0, func(r *Reading) { r.ReadOnly = true })
	probeAll(m)
	assert.Len(t, filter(queued(m), health.PrimaryLost, "n0"), 1, "read-only primary")
	f.set(0, func(r *Reading) { r.ReadOnly = false })
	probeAll(m)
	assert.Len(t, filter(queued(m), health.PrimaryFound, "n0"), 1)

	clk.Advance(time.Minute) // past the aggregation window
	f.fail(0, errors.New("connection refused"))
	probeAll(m)
	assert.Len(t, filter(queued(m), health.PrimaryLost, "n0"), 1, "primary down")
}

func TestStartProbesBeforeReturning(t *testing.T) {
	f := newFakeCluster(t, 3)
	// Configured primary n0 is in fact a replica of n2.
	f.set(0, asReplica)
	f.set(2, asPrimary)
	m := New(names(3), 0, f.probe, Options{Interval: time.Hour})
	m.Start()
	<-m.Ready()
	defer m.Close()
	for i := range 3 {
		assert.True(t, m.Node(i).Probed(), "node %d probed by Start", i)
		assert.Equal(t, 1, f.callCount(i))
	}
	i, ok := m.Primary()
	assert.Equal(t, 2, i, "roles are known when Start returns")
	assert.True(t, ok)
}

func TestProbeHasTimeout(t *testing.T) {
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Interval: 5 * time.Millisecond, Timeout: 200 * time.Millisecond})
	m.Start()
	<-m.Ready()
	require.Eventually(t, func() bool { return f.totalCalls() >= 10 }, eventually, tick)
	m.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Zero(t, f.noDeadline, "every probe has a deadline")
	assert.LessOrEqual(t, f.timeout, 200*time.Millisecond)
	assert.Positive(t, f.timeout)
}

func TestKick(t *testing.T) {
	clk := newFakeClock()
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Interval: time.Hour, Now: clk.Now})
	m.Start()
	<-m.Ready()
	defer m.Close()
	require.Equal(t, 1, f.callCount(0))
	require.Equal(t, 1, f.callCount(1))

	clk.waitLoops(t, 2)

	// A kick within a tenth of an interval of the last probe is not
	// honoured; one after is. Whichever way the two kicks and the loops
	// interleave, each node is probed exactly once more.
	m.Kick()
	clk.Advance(7 * time.Minute)
	m.Kick()
	require.Eventually(t, func() bool { return f.callCount(0) == 2 && f.callCount(1) == 2 }, eventually, tick,
		"kicked: probed long before the next interval")

	m.Kick() // the clock has not moved since the probes: rate-limited
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 2, f.callCount(0))
	assert.Equal(t, 2, f.callCount(1))
}

func TestBeat(t *testing.T) {
	var beats, noDeadline atomic.Int64
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{
		Interval: 10 * time.Millisecond,
		Beat: func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				noDeadline.Add(1)
			}
			beats.Add(1)
			return errors.New("ignored: the primary's probes show its health")
		},
	})
	m.Start()
	<-m.Ready()
	require.Eventually(t, func() bool { return beats.Load() >= 3 }, eventually, tick)
	m.Close()
	n := beats.Load()
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, n, beats.Load(), "no beat after Close")
	assert.Zero(t, noDeadline.Load(), "every beat has a deadline")
	assert.True(t, m.Node(0).Up(), "a failing beat does not take the primary down")
}

func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	var beats atomic.Int64
	f := newFakeCluster(t, 3)
	rec := &recorder{}
	m := New(names(3), 0, f.probe, Options{
		Interval: 5 * time.Millisecond,
		Observer: rec,
		Beat:     func(context.Context) error { beats.Add(1); return nil },
	})
	m.Start()
	<-m.Ready()
	require.Eventually(t, func() bool { return beats.Load() >= 2 && f.totalCalls() >= 9 }, eventually, tick)
	m.Emit(health.Event{Kind: health.FallbackToPrimary, Node: "n0"})
	m.Close()

	calls, b := f.totalCalls(), beats.Load()
	assert.Equal(t, 1, rec.count(health.FallbackToPrimary, "n0"), "events queued before Close are delivered")
	time.Sleep(50 * time.Millisecond) // ten intervals
	assert.Equal(t, calls, f.totalCalls(), "no probe after Close")
	assert.Equal(t, b, beats.Load(), "no beat after Close")
	// Polled here, not in require.Eventually, which runs its condition in
	// goroutines of its own.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(eventually); after > before && time.Now().Before(deadline); {
		time.Sleep(tick)
		after = runtime.NumGoroutine()
	}
	assert.LessOrEqual(t, after, before, "goroutines: %d before Start, %d after Close", before, after)

	assert.NotPanics(t, m.Close, "Close twice")
	assert.NotPanics(t, func() { m.Emit(health.Event{Kind: health.FallbackToPrimary, Node: "n9"}) }, "Emit after Close")
	assert.NotPanics(t, m.Kick, "Kick after Close")
	assert.NotPanics(t, func() { m.Failure(1, errors.New("x")) }, "Failure after Close")
	assert.NotPanics(t, func() { m.ReadOnly(1) }, "ReadOnly after Close")
	assert.Zero(t, rec.count(health.FallbackToPrimary, "n9"), "nothing delivered after Close")
}

func TestCloseWithoutStart(t *testing.T) {
	m := New(names(2), 0, newFakeCluster(t, 2).probe, Options{})
	done := make(chan struct{})
	go func() {
		m.Close()
		m.Close()
		m.Emit(health.Event{Kind: health.NodeDown, Node: "n1"})
		close(done)
	}()
	require.Eventually(t, func() bool { return isClosed(done) }, eventually, tick)
}

func TestProbeRate(t *testing.T) {
	const interval = 10 * time.Millisecond
	f := newFakeCluster(t, 3)
	m := New(names(3), 0, f.probe, Options{Interval: interval})
	start := time.Now()
	m.Start()
	<-m.Ready()
	time.Sleep(20 * interval)
	m.Close()
	intervals := int(time.Since(start) / interval)
	for i := range 3 {
		n := f.callCount(i)
		// One probe at Start, then at most one per tick (a late ticker
		// drops ticks, it never adds any).
		assert.LessOrEqual(t, n, intervals+2, "node %d: %d probes in %d intervals", i, n, intervals)
		assert.GreaterOrEqual(t, n, 2, "node %d: probed on the interval", i)
	}
}

func TestKickRateLimited(t *testing.T) {
	const interval = 50 * time.Millisecond
	f := newFakeCluster(t, 2)
	m := New(names(2), 0, f.probe, Options{Interval: interval})
	start := time.Now()
	m.Start()
	<-m.Ready()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				m.Kick() // five times as often as honoured
				time.Sleep(time.Millisecond)
			}
		}
	})
	time.Sleep(4 * interval)
	close(stop)
	wg.Wait()
	m.Close()
	elapsed := time.Since(start)
	// At most one probe per tenth of an interval from kicks, plus the ticks.
	limit := int(elapsed/(interval/10)) + int(elapsed/interval) + 2
	for i := range 2 {
		n := f.callCount(i)
		assert.LessOrEqual(t, n, limit, "node %d: %d probes in %s", i, n, elapsed)
		assert.Greater(t, n, int(elapsed/interval)+1, "node %d: kicks were honoured", i)
	}
}

// A probe that read the primary writable just before a write was rejected
// as read-only must not undo the rejection when it lands after it: the
// write would be retried on the same read-only node (seen in the lab's
// switchover under load).
func TestStaleProbeDoesNotUndoReadOnly(t *testing.T) {
	clk := newFakeClock()
	var m *Monitor
	probe := func(ctx context.Context, i int) (Reading, error) {
		r := Reading{Position: mustGTID(t, "0-1-1")} // writable, as read
		if i == 0 {
			clk.Advance(time.Millisecond)
			m.ReadOnly(0) // the rejection lands while the probe is out
			clk.Advance(time.Millisecond)
		}
		return r, nil
	}
	m = New(names(2), 0, probe, Options{Now: clk.Now})
	m.probeOnce(0)
	_, ok := m.Primary()
	assert.False(t, ok, "a probe sent before the rejection made the node writable again")
	// A probe sent after the rejection is believed.
	m.probe = func(context.Context, int) (Reading, error) { return Reading{Position: mustGTID(t, "0-1-1")}, nil }
	m.probeOnce(0)
	_, ok = m.Primary()
	assert.True(t, ok)
}
