package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/monitor"
)

// Chaos tests: faults injected into a private lab under load; each asserts
// invariants (no read error reaches a caller, no write on a replica, no
// acknowledged write lost, no stale read in a session) and logs the
// figures docs/failover.md reports.

const (
	interval = 250 * time.Millisecond // probe interval of these tests
	// chaosParams: fast probes, short connect timeout and write pause.
	chaosParams = "rwshard.probeInterval=250ms&rwshard.probeTimeout=200ms&rwshard.connectTimeout=1s&rwshard.writePause=1s"
)

// workers runs n goroutines that call f until stop is closed.
func workers(wg *sync.WaitGroup, n int, stop <-chan struct{}, f func()) {
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					f()
				}
			}
		})
	}
}

// eventLog records the driver's events with their time.
type eventLog struct {
	mu     sync.Mutex
	events []health.Event
}

func (l *eventLog) Observe(e health.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// first returns the first event of kind for node at or after t.
func (l *eventLog) first(kind health.EventKind, node string, after time.Time) (health.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Kind == kind && e.Node == node && !e.Time.Before(after) {
			return e, true
		}
	}
	return health.Event{}, false
}

// count returns the number of deliveries of kind.
func (l *eventLog) count(kind health.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func (l *eventLog) all() []health.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]health.Event(nil), l.events...)
}

// waitEvent waits for an event and returns how long after since it came.
func (l *eventLog) waitEvent(t *testing.T, kind health.EventKind, node string, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	var e health.Event
	require.Eventually(t, func() bool {
		var ok bool
		e, ok = l.first(kind, node, since)
		return ok
	}, within, 10*time.Millisecond, "no %s event for %s within %s; events: %v", kind, node, within, l.all())
	return e.Time.Sub(since)
}

// chaosDB opens rwshard over l through NewConnector with an event log.
func chaosDB(t *testing.T, l *lab.Lab, params string) (*sql.DB, *eventLog) {
	t.Helper()
	cfg, err := rwshard.ParseDSN(labDSN(l, params))
	require.NoError(t, err)
	log := &eventLog{}
	cfg.Observer = log
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, log
}

// TestChaosReplicaKilled: a replica dies under 8 concurrent readers; no
// read error reaches a caller, the node is out within two probe intervals
// and back within two intervals of its restart.
func TestChaosReplicaKilled(t *testing.T) {
	chaosReplicaKilled(t, func(ctx context.Context, db *sql.DB) *sql.Row {
		return db.QueryRowContext(ctx, "SELECT @@server_id")
	})
}

// TestChaosReplicaKilledPrepared is TestChaosReplicaKilled with the reads
// through one statement prepared on the *sql.DB, as sysbench and many
// services run them: the statement remembers the server-side statement
// of the backend connection it last ran on (stmt.ent), and the kill
// closes that connection under it.
func TestChaosReplicaKilledPrepared(t *testing.T) {
	var st *sql.Stmt
	chaosReplicaKilled(t, func(ctx context.Context, db *sql.DB) *sql.Row {
		if st == nil {
			var err error
			st, err = db.PrepareContext(ctx, "SELECT @@server_id FROM DUAL WHERE ? = 1")
			require.NoError(t, err)
		}
		return st.QueryRowContext(ctx, 1)
	})
}

// chaosReplicaKilled kills a replica under 8 readers that each read
// @@server_id with read; read is called once from the test's goroutine
// before the readers start.
func chaosReplicaKilled(t *testing.T, read func(context.Context, *sql.DB) *sql.Row) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	db, events := chaosDB(t, l, chaosParams)
	victim := l.Replicas()[0]
	var sid0 int64
	require.NoError(t, read(ctx, db).Scan(&sid0))

	var reads, failures atomic.Int64
	var mu sync.Mutex
	served := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers(&wg, 8, stop, func() {
		var sid int64
		if err := read(ctx, db).Scan(&sid); err != nil {
			failures.Add(1)
			t.Errorf("read failed: %v", err)
			return
		}
		reads.Add(1)
		mu.Lock()
		served[l.NodeByServerID(sid)]++
		mu.Unlock()
	})
	time.Sleep(2 * time.Second)
	killed := time.Now()
	require.NoError(t, l.Kill(victim))
	out := events.waitEvent(t, health.NodeDown, victim.Name, killed, 10*time.Second)
	time.Sleep(4 * time.Second)
	// The probes may see the server up before Restart has seen it ready:
	// wait for a node-up since the restart began, and count from the
	// moment Restart returned (0 when the node was back before that).
	restarting := time.Now()
	require.NoError(t, l.Restart(ctx, victim))
	restarted := time.Now()
	back := max(0, events.waitEvent(t, health.NodeUp, victim.Name, restarting, 10*time.Second)-restarted.Sub(restarting))
	mu.Lock()
	before := served[victim.Name]
	mu.Unlock()
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()

	t.Logf("%d reads by 8 readers over ~%s: %d failed; %s out %s after the kill, back %s after its restart; served: %v",
		reads.Load(), time.Since(killed.Add(-2*time.Second)).Round(time.Second), failures.Load(), victim.Name,
		out.Round(time.Millisecond), back.Round(time.Millisecond), served)
	assert.Zero(t, failures.Load(), "read errors reached callers")
	assert.LessOrEqual(t, out, 2*interval, "node out later than two probe intervals after the kill")
	assert.LessOrEqual(t, back, 2*interval, "node back later than two probe intervals after the restart")
	assert.Greater(t, served[victim.Name], before, "the restarted replica took no reads")
}

// TestChaosPrimaryKilled: the primary dies under mixed load. No write runs
// on a replica; writes fail with ErrPrimaryUnavailable within WritePause
// plus the connect timeout; reads go on without error; writes succeed
// again within two intervals of the restart; every acknowledged write is
// there afterwards.
func TestChaosPrimaryKilled(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE acked (id INT PRIMARY KEY, sid INT)")
	db, events := chaosDB(t, l, chaosParams)
	primary := l.Primary()
	const writePause, connectTimeout = time.Second, time.Second

	var (
		mu            sync.Mutex
		acked         []int
		unavailable   int
		slowestFail   time.Duration
		otherWriteErr []error
		readErrs      atomic.Int64
		reads         atomic.Int64
		nextID        atomic.Int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers(&wg, 2, stop, func() {
		id := int(nextID.Add(1))
		begin := time.Now()
		_, err := db.ExecContext(ctx, "INSERT INTO acked VALUES (?, @@server_id)", id)
		took := time.Since(begin)
		mu.Lock()
		switch {
		case err == nil:
			acked = append(acked, id)
		case errors.Is(err, rwshard.ErrPrimaryUnavailable):
			unavailable++
			slowestFail = max(slowestFail, took)
		default:
			// In flight when the primary died: outcome unknown,
			// not acknowledged.
			otherWriteErr = append(otherWriteErr, err)
		}
		mu.Unlock()
		if err != nil {
			time.Sleep(50 * time.Millisecond)
		}
	})
	// The readers read in sessions of their own: in the writers' scope
	// (the connector's), a write acknowledged just before the kill that
	// reached no replica makes the reads after it wait for it and then
	// fail with ErrPrimaryUnavailable while the primary is down, rather
	// than read without a write that may still be there when it returns
	// (docs/consistency.md).
	workers(&wg, 4, stop, func() {
		var n int
		if err := db.QueryRowContext(rwshard.WithSession(ctx), "SELECT COUNT(*) FROM acked").Scan(&n); err != nil {
			readErrs.Add(1)
			t.Errorf("read failed: %v", err)
		}
		reads.Add(1)
	})
	time.Sleep(2 * time.Second)
	require.NoError(t, l.Kill(primary))
	time.Sleep(3 * time.Second)
	mu.Lock()
	ackedBeforeRestart := len(acked)
	mu.Unlock()
	require.NoError(t, l.Restart(ctx, primary))
	restarted := time.Now()
	// Writes succeed again: the first acknowledged write after the restart.
	var backAfter time.Duration
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) > ackedBeforeRestart {
			backAfter = time.Since(restarted)
			return true
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	require.NoError(t, l.Sync(ctx, 20*time.Second))
	mu.Lock()
	defer mu.Unlock()
	t.Logf("writes: %d acknowledged, %d ErrPrimaryUnavailable (slowest %s), %d in flight at the kill; reads: %d, %d errors; writes back %s after the restart; events: %v",
		len(acked), unavailable, slowestFail.Round(time.Millisecond), len(otherWriteErr), reads.Load(), readErrs.Load(),
		backAfter.Round(time.Millisecond), events.all())
	assert.Zero(t, readErrs.Load(), "read errors reached callers")
	assert.Positive(t, unavailable, "no write saw ErrPrimaryUnavailable: was the primary really down?")
	assert.LessOrEqual(t, slowestFail, writePause+connectTimeout+interval, "a write waited past WritePause + connect timeout")
	assert.LessOrEqual(t, len(otherWriteErr), 2, "more failures than writes in flight at the kill: %v", otherWriteErr)
	assert.LessOrEqual(t, backAfter, 2*interval+100*time.Millisecond, "writes came back later than two intervals after the restart")

	// Every acknowledged write is on every node, and every row was written
	// by the primary.
	for _, n := range l.Nodes() {
		rows, err := direct(t, n, "").QueryContext(ctx, "SELECT id, sid FROM acked")
		require.NoError(t, err)
		have := map[int]bool{}
		for rows.Next() {
			var id, sid int
			require.NoError(t, rows.Scan(&id, &sid))
			have[id] = true
			assert.Equal(t, primary.ServerID, sid, "row %d was written on server %d (%s)", id, sid, l.NodeByServerID(int64(sid)))
		}
		require.NoError(t, rows.Err())
		for _, id := range acked {
			assert.True(t, have[id], "acknowledged write %d missing on %s", id, n.Name)
		}
	}
	// Replicas logged no transaction of their own.
	for _, r := range l.Replicas() {
		var pos string
		require.NoError(t, r.Admin().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos))
		g, err := monitor.ParseGTID(pos)
		require.NoError(t, err)
		assert.NotContains(t, pos, fmt.Sprintf("-%d-", r.ServerID), "%s binlogged its own transaction: %s", r.Name, g)
	}
}

// TestChaosSwitchover: a planned switchover under a write loop, WritePause
// longer than the switchover: no failed write, no lost write, writes land
// on the new primary, events per node rather than per request.
func TestChaosSwitchover(t *testing.T) {
	chaosSwitchover(t, func(ctx context.Context, db *sql.DB) func(id int) error {
		return func(id int) error {
			_, err := db.ExecContext(ctx, "INSERT INTO sw VALUES (?, @@server_id)", id)
			return err
		}
	})
}

// TestChaosSwitchoverPrepared is TestChaosSwitchover with the writes
// through one statement prepared on the *sql.DB: each logical
// connection's statement remembers its route (stmt.routes), which names
// the primary's role, not a node, so the writes follow the switchover.
func TestChaosSwitchoverPrepared(t *testing.T) {
	chaosSwitchover(t, func(ctx context.Context, db *sql.DB) func(id int) error {
		st, err := db.PrepareContext(ctx, "INSERT INTO sw VALUES (?, @@server_id)")
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return func(id int) error {
			_, err := st.ExecContext(ctx, id)
			return err
		}
	})
}

// chaosSwitchover switches the primary over under 4 writers. writer,
// called once on the test's goroutine with the rwshard handle, returns
// what one write of a worker does.
func chaosSwitchover(t *testing.T, writer func(ctx context.Context, db *sql.DB) func(id int) error) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE sw (id INT PRIMARY KEY, sid INT)")
	db, events := chaosDB(t, l, "rwshard.probeInterval=250ms&rwshard.probeTimeout=200ms&rwshard.writePause=10s")
	newPrimary := l.Replicas()[1]
	write := writer(ctx, db)

	var mu sync.Mutex
	var acked []int
	var failed []error
	var nextID atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers(&wg, 4, stop, func() {
		id := int(nextID.Add(1))
		err := write(id)
		mu.Lock()
		if err != nil {
			failed = append(failed, err)
		} else {
			acked = append(acked, id)
		}
		mu.Unlock()
	})
	time.Sleep(time.Second)
	begin := time.Now()
	require.NoError(t, l.Switchover(ctx, newPrimary))
	took := time.Since(begin)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	require.NoError(t, l.Sync(ctx, 20*time.Second))

	mu.Lock()
	defer mu.Unlock()
	t.Logf("switchover took %s; %d writes acknowledged, %d failed; events: %v", took.Round(time.Millisecond), len(acked), len(failed), events.all())
	assert.Empty(t, failed, "writes failed during the switchover")
	have := map[int]int{}
	rows, err := direct(t, newPrimary, "").QueryContext(ctx, "SELECT id, sid FROM sw")
	require.NoError(t, err)
	for rows.Next() {
		var id, sid int
		require.NoError(t, rows.Scan(&id, &sid))
		have[id] = sid
	}
	require.NoError(t, rows.Err())
	for _, id := range acked {
		_, ok := have[id]
		assert.True(t, ok, "acknowledged write %d lost", id)
	}
	// The last writes ran on the new primary.
	var last int
	for id := range have {
		last = max(last, id)
	}
	assert.Equal(t, newPrimary.ServerID, have[last], "the last write ran on %s", l.NodeByServerID(int64(have[last])))
	assert.Equal(t, 1, events.count(health.SwitchoverFollowed), "switchover events: %v", events.all())
	assert.LessOrEqual(t, len(events.all()), 10, "events per request instead of per node: %v", events.all())
}

// TestChaosLagFence: a replica delayed by MASTER_DELAY=5 with
// maxReplicaLag=1s is fenced within two intervals of crossing the limit,
// whatever Seconds_Behind_Master says, and returns once caught up.
func TestChaosLagFence(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE ticks (id INT AUTO_INCREMENT PRIMARY KEY)")
	db, events := chaosDB(t, l, chaosParams+"&rwshard.maxReplicaLag=1s")
	slow := l.Replicas()[0]

	// A steady trickle of writes, as any live primary has.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				_, _ = db.ExecContext(ctx, "INSERT INTO ticks VALUES ()")
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(time.Second)

	require.NoError(t, l.Lag(ctx, slow, 5*time.Second))
	delayed := time.Now()
	// The replica's data stops moving at `delayed`: it is over the 1s
	// limit one second later.
	overLimit := delayed.Add(time.Second)
	// Fenced for lag (an earlier "replication stopped" fence from the
	// STOP SLAVE inside Lag would fold a second Fenced event into the
	// window's summary, so watch the node's state, not the events).
	fenced := waitNode(t, db, slow.Name, delayed, 10*time.Second, func(n rwshard.NodeStats) bool {
		return n.Fenced && n.LagKnown && n.Lag > time.Second && n.Lag < time.Hour
	})
	// What Seconds_Behind_Master says meanwhile: on a delayed replica it
	// often reads 0 or less than the delay; the fence does not depend on it.
	var sbm []string
	for range 8 {
		sbm = append(sbm, replicaSBM(t, slow))
		time.Sleep(interval / 2)
	}
	t.Logf("fenced %s after the delay began (%s after crossing 1s); Seconds_Behind_Master sampled while fenced: %v",
		fenced.Round(time.Millisecond), (fenced - time.Second).Round(time.Millisecond), sbm)
	// Two intervals is the bound by construction (one of sampling
	// granularity, one until the next probe); 100ms of slack for the probe
	// itself and event delivery on a loaded CI machine.
	assert.LessOrEqual(t, delayed.Add(fenced).Sub(overLimit), 2*interval+100*time.Millisecond, "fenced later than two intervals after crossing the limit")

	// While fenced, reads avoid it.
	for range 20 {
		assert.NotEqual(t, slow.Name, ranOn(t, l, db, ctx, "SELECT @@server_id"))
	}
	// Remove the delay: it catches up and comes back.
	require.NoError(t, l.Lag(ctx, slow, 0))
	undelayed := time.Now()
	back := waitNode(t, db, slow.Name, undelayed, 20*time.Second, func(n rwshard.NodeStats) bool { return !n.Fenced })
	t.Logf("unfenced %s after the delay was removed; events: %v", back.Round(time.Millisecond), events.all())
}

// waitNode polls the connector's stats until node satisfies ok and returns
// how long after since that was seen.
func waitNode(t *testing.T, db *sql.DB, node string, since time.Time, within time.Duration, ok func(rwshard.NodeStats) bool) time.Duration {
	t.Helper()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	require.NoError(t, err)
	var at time.Time
	var last rwshard.NodeStats
	require.Eventually(t, func() bool {
		for _, n := range c.Stats().Nodes {
			if n.Name == node {
				last = n
				if ok(n) {
					at = time.Now()
					return true
				}
			}
		}
		return false
	}, within, 5*time.Millisecond, "%s never reached the state; last: %+v", node, last)
	return at.Sub(since)
}

// replicaSBM reads Seconds_Behind_Master for the log.
func replicaSBM(t *testing.T, n *lab.Node) string {
	t.Helper()
	rows, err := n.Admin().Query("SHOW SLAVE STATUS")
	require.NoError(t, err)
	defer rows.Close()
	cols, _ := rows.Columns()
	require.True(t, rows.Next())
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	for i, c := range cols {
		if c == "Seconds_Behind_Master" {
			if vals[i].Valid {
				return vals[i].String
			}
			return "NULL"
		}
	}
	return "?"
}

// TestChaosReadYourWrites: 10,000 write-then-read pairs per consistency
// mode against a delayed replica: no read misses its own session's write.
func TestChaosReadYourWrites(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	setup(t, l, "CREATE TABLE kv (k INT PRIMARY KEY, v INT)")
	ctx := labtest.Ctx(t, 3*time.Minute)
	require.NoError(t, l.Lag(ctx, l.Replicas()[0], 2*time.Second))

	for _, mode := range []string{"session", "causal"} {
		t.Run(mode, func(t *testing.T) {
			db, _ := chaosDB(t, l, chaosParams+"&rwshard.maxReplicaLag=1s&rwshard.consistency="+mode)
			const pairs, workers = 10_000, 8
			var stale, primaryReads, done atomic.Int64
			var wg sync.WaitGroup
			base := map[string]int{"session": 0, "causal": 1_000_000}[mode]
			for w := range workers {
				wg.Go(func() {
					for i := w; i < pairs; i += workers {
						sctx := rwshard.WithSession(ctx)
						k := base + i
						if _, err := db.ExecContext(sctx, "REPLACE INTO kv VALUES (?, ?)", k, i); err != nil {
							t.Errorf("write %d: %v", k, err)
							return
						}
						var v, sid int64
						err := db.QueryRowContext(sctx, "SELECT v, @@server_id FROM kv WHERE k = ?", k).Scan(&v, &sid)
						if errors.Is(err, sql.ErrNoRows) || err == nil && v != int64(i) {
							stale.Add(1)
						} else if err != nil {
							t.Errorf("read %d: %v", k, err)
							return
						}
						if sid == int64(l.Primary().ServerID) {
							primaryReads.Add(1)
						}
						done.Add(1)
					}
				})
			}
			wg.Wait()
			t.Logf("%s: %d pairs, %d stale reads, primary served %.1f%% of the reads",
				mode, done.Load(), stale.Load(), 100*float64(primaryReads.Load())/float64(done.Load()))
			assert.Equal(t, int64(pairs), done.Load())
			assert.Zero(t, stale.Load(), "stale reads in a session")
		})
	}
}

// TestChaosBlackholedReplica: a replica that accepts TCP and never answers
// is out after its first probe times out; reads meanwhile give up on it
// within the connect timeout and go elsewhere.
func TestChaosBlackholedReplica(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	bh, err := lab.NewBlackhole()
	require.NoError(t, err)
	defer bh.Close()
	dsn := fmt.Sprintf("%s:%s@tcp(%s),tcp(%s),tcp(%s)/%s?%s", lab.AppUser, lab.AppPassword,
		l.Primary().Addr(), l.Replicas()[0].Addr(), bh.Addr(), lab.AppDatabase,
		"rwshard.probeInterval=250ms&rwshard.probeTimeout=200ms&rwshard.connectTimeout=500ms")
	cfg, err := rwshard.ParseDSN(dsn)
	require.NoError(t, err)
	log := &eventLog{}
	cfg.Observer = log
	opened := time.Now()
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	out := log.waitEvent(t, health.NodeDown, "replica2", opened, 5*time.Second)

	var slowest time.Duration
	for range 50 {
		begin := time.Now()
		node := ranOn(t, l, db, ctx, "SELECT @@server_id")
		slowest = max(slowest, time.Since(begin))
		assert.NotEqual(t, "replica2", node)
	}
	t.Logf("blackholed replica out %s after open; slowest of 50 reads %s; %d TCP connections accepted by the blackhole",
		out.Round(time.Millisecond), slowest.Round(time.Microsecond), bh.Accepted())
	assert.LessOrEqual(t, out, 200*time.Millisecond+interval, "probe did not give up at its timeout")
	assert.Less(t, slowest, 500*time.Millisecond+interval, "a read waited on the blackhole past the connect timeout")
}

// TestChaosReplicationStopped: a replica whose SQL thread stops is fenced
// (not "lag 0") and reads avoid it; it returns when replication restarts.
func TestChaosReplicationStopped(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db, events := chaosDB(t, l, chaosParams)
	r := l.Replicas()[1]
	stopped := time.Now()
	require.NoError(t, l.StopSQLThread(ctx, r))
	fenced := events.waitEvent(t, health.Fenced, r.Name, stopped, 5*time.Second)
	for range 20 {
		assert.NotEqual(t, r.Name, ranOn(t, l, db, ctx, "SELECT @@server_id"))
	}
	started := time.Now() // the probes may see it running before StartReplication returns
	require.NoError(t, l.StartReplication(ctx, r))
	back := events.waitEvent(t, health.Unfenced, r.Name, started, 5*time.Second)
	t.Logf("SQL thread stopped: fenced after %s; restarted: unfenced after %s", fenced.Round(time.Millisecond), back.Round(time.Millisecond))
	assert.LessOrEqual(t, fenced, 2*interval)
}

// TestLabHeartbeat: with heartbeatWrite, rwshard keeps a pt-heartbeat row on
// the primary (creating pt-heartbeat's table), and it replicates.
func TestLabHeartbeat(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db, _ := chaosDB(t, l, chaosParams+"&rwshard.heartbeatTable=app.heartbeat&rwshard.heartbeatWrite=true")
	require.NoError(t, db.PingContext(ctx))
	read := func(n *lab.Node) (ts time.Time) {
		var s string
		err := direct(t, n, "").QueryRowContext(ctx, "SELECT ts FROM heartbeat WHERE server_id = ?", l.Primary().ServerID).Scan(&s)
		if err != nil {
			return time.Time{}
		}
		ts, err = time.ParseInLocation("2006-01-02T15:04:05.999999", s, time.UTC)
		require.NoError(t, err, s)
		return ts
	}
	require.Eventually(t, func() bool { return !read(l.Primary()).IsZero() }, 5*time.Second, 20*time.Millisecond)
	first := read(l.Primary())
	assert.WithinDuration(t, time.Now(), first, 2*time.Second, "heartbeat is not UTC now")
	require.Eventually(t, func() bool { return read(l.Primary()).After(first) }, 5*time.Second, 20*time.Millisecond, "heartbeat does not advance")
	for _, r := range l.Replicas() {
		require.Eventually(t, func() bool { return !read(r).Before(first) }, 5*time.Second, 20*time.Millisecond, "heartbeat not on %s", r.Name)
	}
}
