package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where two features meet: the defects of the statement path's special
// cases, each tested as a user meets it (plain database/sql, default
// settings unless the defect needs one, the GRANT ALL ON app.* user).

// ROW_COUNT(), FOUND_ROWS() and SHOW WARNINGS answer for the caller's own
// last statement, with replicas and causal consistency (the default): the
// write's GTID comes back in its own OK packet, and nothing else runs on
// the caller's connection in between. It answered -1 when rwshard read
// @@last_gtid there after the write.
func TestLabConnectionFunctionsAfterWrite(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS rowcount (id INT PRIMARY KEY, v TINYINT)", "TRUNCATE rowcount")
	db := labtest.OpenPlain(t, l, "")
	sc, err := db.Conn(ctx)
	require.NoError(t, err)
	defer sc.Close()

	res, err := sc.ExecContext(ctx, "INSERT INTO rowcount VALUES (1, 1), (2, 2), (3, 3)")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.Equal(t, int64(3), n)
	var rc int64
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT ROW_COUNT()").Scan(&rc))
	assert.Equal(t, int64(3), rc, "ROW_COUNT() after the INSERT")

	_, err = sc.ExecContext(ctx, "UPDATE rowcount SET v = v + 1 WHERE id >= 2")
	require.NoError(t, err)
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT ROW_COUNT()").Scan(&rc))
	assert.Equal(t, int64(2), rc, "ROW_COUNT() after the UPDATE")

	// A warning: 300 does not fit a TINYINT (MariaDB's default sql_mode is
	// strict, so IGNORE makes it a warning).
	_, err = sc.ExecContext(ctx, "UPDATE IGNORE rowcount SET v = 300 WHERE id = 1")
	require.NoError(t, err)
	rows, err := sc.QueryContext(ctx, "SHOW WARNINGS")
	require.NoError(t, err)
	warnings := 0
	for rows.Next() {
		warnings++
	}
	require.NoError(t, rows.Close())
	assert.Equal(t, 1, warnings, "SHOW WARNINGS after the UPDATE IGNORE")

	rows, err = sc.QueryContext(ctx, "SELECT SQL_CALC_FOUND_ROWS id FROM rowcount ORDER BY id LIMIT 1")
	require.NoError(t, err)
	for rows.Next() {
	}
	require.NoError(t, rows.Close())
	var found int64
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT FOUND_ROWS()").Scan(&found))
	assert.Equal(t, int64(3), found, "FOUND_ROWS()")

	// And the next read sees the writes on a replica: the GTIDs were known.
	var v int
	node := ranOn(t, l, db, ctx, "SELECT @@server_id FROM rowcount WHERE id = 3 AND v = 4")
	assert.NotEqual(t, "primary", node)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM rowcount WHERE id = 2").Scan(&v))
	assert.Equal(t, 3, v)
}

// A read that fails with the server's error on a replica is a statement
// sent to that node all the same: counted in Queries and Reads as the
// server counts it (Com_select). Probes run once, at start, so the
// servers' counters count rwshard's statements only.
func TestLabMetricsCountFailedReads(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS counted (id INT PRIMARY KEY)", "REPLACE INTO counted VALUES (1)")
	db := labtest.OpenPlain(t, l, "rwshard.probeInterval=1h&rwshard.consistency=eventual")
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	nodes := append([]*lab.Node{l.Primary()}, l.Replicas()...)
	// The replicas' SQL threads run the replicated INSERTs too: their
	// Com_insert is not rwshard's.
	com := func() map[string]int64 {
		out := map[string]int64{}
		for _, n := range nodes {
			st := labtest.Status(t, n, "Com_select", "Com_insert")
			out[n.Name] = st["Com_select"]
			if n == l.Primary() {
				out[n.Name] += st["Com_insert"]
			}
		}
		return out
	}
	queries := func() map[string]int64 {
		out := map[string]int64{}
		for _, n := range c.Stats().Nodes {
			out[n.Name] = int64(n.Queries)
		}
		return out
	}
	beforeCom, beforeQ, beforeReads := com(), queries(), c.Stats().Reads
	const reads, failing, writes = 20, 6, 4
	for i := range reads {
		var x int
		err := db.QueryRowContext(ctx, "SELECT id FROM counted WHERE id = 1").Scan(&x)
		require.NoError(t, err, "read %d", i)
	}
	for range failing {
		_, err := db.QueryContext(ctx, "SELECT id FROM no_such_table_here")
		require.Error(t, err)
		assert.Equal(t, uint16(1146), serverErr(err), "%v", err)
	}
	for i := range writes {
		_, err := db.ExecContext(ctx, "INSERT INTO counted VALUES (?) ON DUPLICATE KEY UPDATE id = id", 100+i)
		require.NoError(t, err)
	}
	afterCom, afterQ := com(), queries()
	for _, n := range nodes {
		assert.Equal(t, afterCom[n.Name]-beforeCom[n.Name], afterQ[n.Name]-beforeQ[n.Name],
			"%s: rwshard's count against the server's statements", n.Name)
	}
	assert.Equal(t, uint64(reads+failing), c.Stats().Reads-beforeReads, "reads_total counts the failed reads")
	assert.Equal(t, int64(writes), afterQ["primary"]-beforeQ["primary"], "the writes, on the primary")
}

// Explain returns the plan the statement then runs: a read after a write
// with every replica behind names the replicas it will wait on, and the
// read runs on one of them (the balancer, which Explain never asks, picks
// among them as the read runs). In a read-only transaction held on a
// replica, Explain of a write is refused as its execution is.
func TestLabExplainIsThePlan(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS explained (id INT PRIMARY KEY, v INT)", "TRUNCATE explained")
	tracer := &nodeTracer{}
	db := labtest.OpenTraced(t, labtest.PlainDSN(l, "rwshard.readOnlyTx=replica&rwshard.causalTimeout=3s"), tracer)
	for _, r := range l.Replicas() {
		require.NoError(t, l.Lag(ctx, r, time.Second))
	}
	t.Cleanup(func() {
		for _, r := range l.Replicas() {
			_ = l.Lag(context.Background(), r, 0)
		}
	})
	time.Sleep(500 * time.Millisecond) // the probes see the delay
	for i := range 10 {
		_, err := db.ExecContext(ctx, "INSERT INTO explained VALUES (?, ?)", i, i)
		require.NoError(t, err)
		plan, err := rwshard.Explain(ctx, db, "SELECT v FROM explained WHERE id = ?", i)
		require.NoError(t, err)
		var v int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM explained WHERE id = ?", i).Scan(&v))
		assert.Equal(t, i, v, "read %d sees its write", i)
		ran := tracer.last()
		assert.True(t, contains(plan.Targets, ran) || ran == "primary" && strings.Contains(plan.Fallback, "primary"),
			"pair %d: ran on %s, Explain said %v (fallback %q)", i, ran, plan.Targets, plan.Fallback)
	}

	// A *sql.Conn whose last statement was a write: its read-only
	// transaction still runs on a replica.
	sc, err := db.Conn(ctx)
	require.NoError(t, err)
	defer sc.Close()
	_, err = sc.ExecContext(ctx, "INSERT INTO explained VALUES (100, 100)")
	require.NoError(t, err)
	tx, err := sc.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	assert.NotEqual(t, "primary", ranOn(t, l, tx, ctx, "SELECT @@server_id"), "a read-only transaction on a replica")
	_, err = rwshard.ExplainConn(ctx, sc, "INSERT INTO explained VALUES (101, 101)")
	assert.ErrorIs(t, err, rwshard.ErrWriteToReplica, "Explain refuses what the execution refuses")
	_, err = tx.ExecContext(ctx, "INSERT INTO explained VALUES (101, 101)")
	assert.ErrorIs(t, err, rwshard.ErrWriteToReplica)
	require.NoError(t, tx.Rollback())
}

// nodeTracer keeps the node each statement ran on.
type nodeTracer struct {
	mu    sync.Mutex
	nodes []string
}

func (t *nodeTracer) StatementStart(ctx context.Context, _ rwshard.StatementStart) context.Context {
	return ctx
}

func (t *nodeTracer) StatementEnd(_ context.Context, e rwshard.StatementEnd) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nodes = append(t.nodes, e.Node)
}

func (t *nodeTracer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.nodes) == 0 {
		return ""
	}
	return t.nodes[len(t.nodes)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// openWithPrimary opens rwshard over l's replicas with the primary at
// addr (a closed port, a blackhole), waiting for the first probes.
func openWithPrimary(t *testing.T, l *lab.Lab, addr, params string) (*sql.DB, *rwshard.Connector, *eventLog) {
	t.Helper()
	cfg, err := rwshard.ParseDSN(labtest.PlainDSN(l, params))
	require.NoError(t, err)
	cfg.Nodes[0].Addr = addr
	log := &eventLog{}
	cfg.Observer = log
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c, log
}

// A primary that is down from the start is no different from one that
// went away: every write fails with ErrPrimaryUnavailable after the write
// pause, in one RouteError naming the primary, with the cause once, also
// after Ready; a blackholed one does too, within the caller's deadline,
// and the error does not claim the caller's deadline passed. Reads go to
// the replicas from the first statement, never failing.
func TestLabPrimaryDownFromStart(t *testing.T) {
	l := rwLab.Get(t)
	bh, err := lab.NewBlackhole()
	require.NoError(t, err)
	defer bh.Close()
	for _, c := range []struct {
		name, addr string
	}{
		{"port closed", closedAddr(t)},
		{"blackholed", bh.Addr()},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, cn, _ := openWithPrimary(t, l, c.addr,
				"rwshard.writePause=1s&rwshard.connectTimeout=500ms&rwshard.probeTimeout=300ms&rwshard.probeInterval=200ms")
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			// Reads from the first statement: the replicas serve.
			for range 5 {
				var id int64
				require.NoError(t, db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id))
				assert.NotEqual(t, "primary", l.NodeByServerID(id))
			}
			for _, ready := range []bool{false, true} {
				if ready {
					require.NoError(t, cn.Ready(ctx))
				}
				begin := time.Now()
				_, err := db.ExecContext(ctx, "INSERT INTO counted VALUES (999)")
				took := time.Since(begin)
				require.ErrorIs(t, err, rwshard.ErrPrimaryUnavailable, "ready %v", ready)
				var re *rwshard.RouteError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, "primary", re.Node)
				assert.Equal(t, 1, strings.Count(err.Error(), "rwshard:"), "said once: %v", err)
				assert.Equal(t, 1, strings.Count(err.Error(), "INSERT"), "said once: %v", err)
				assert.False(t, errors.Is(err, context.DeadlineExceeded), "not the caller's deadline: %v", err)
				assert.True(t, took >= time.Second && took < 5*time.Second, "after the write pause: %v", took)
				assert.NoError(t, ctx.Err(), "the caller's context is alive")
			}
		})
	}
}

// Ready means probed: with a replica that never answers, Health says a
// node serves only once a probe answered it, not before the first probe.
func TestLabReadyMeansProbed(t *testing.T) {
	l := rwLab.Get(t)
	bh, err := lab.NewBlackhole()
	require.NoError(t, err)
	defer bh.Close()
	cfg, err := rwshard.ParseDSN(labtest.PlainDSN(l, "rwshard.probeTimeout=2s&rwshard.probeInterval=500ms"))
	require.NoError(t, err)
	cfg.Nodes[2].Addr = bh.Addr()
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	defer c.Close()
	h := c.Health()
	assert.False(t, h.Ready, "not ready before the primary's first probe: %+v", h)
	assert.Equal(t, 0, h.Groups[0].ReplicasServing, "no replica serves before its first probe: %+v", h.Groups[0])
	ctx := labtest.Ctx(t, 30*time.Second)
	require.NoError(t, c.Ready(ctx))
	h = c.Health()
	assert.True(t, h.Ready, "%+v", h)
	assert.Equal(t, 1, h.Groups[0].ReplicasServing, "the replica that answered, not the silent one: %+v", h.Groups[0])
}

// The transaction guard's idle timeout is what Commit reports, also when
// a statement met it first.
func TestLabTxIdleTimeoutAfterStatement(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS idled (id INT PRIMARY KEY, v INT)", "REPLACE INTO idled VALUES (1, 0)")
	db := labtest.OpenPlain(t, l, "rwshard.txIdleTimeout=200ms")
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE idled SET v = 1 WHERE id = 1")
	require.NoError(t, err)
	time.Sleep(600 * time.Millisecond)
	_, err = tx.ExecContext(ctx, "UPDATE idled SET v = 2 WHERE id = 1")
	assert.ErrorIs(t, err, rwshard.ErrTxIdleTimeout, "the statement after idling")
	err = tx.Commit()
	assert.ErrorIs(t, err, rwshard.ErrTxIdleTimeout, "the Commit after it")
	var v int
	require.NoError(t, direct(t, l.Primary(), "").QueryRowContext(ctx, "SELECT v FROM idled WHERE id = 1").Scan(&v))
	assert.Equal(t, 0, v, "rolled back")
}

// Reads keep flowing while the primary is away, with read-your-writes
// kept where it can be: a write's GTID is known from its own round trip,
// so a replica that has it serves the read after it even once the
// primary is dead; a write no replica has (replication stopped under it)
// is read from the most advanced replica, and an event and the route
// reason say so. No read fails while a replica is up.
func TestLabReadsWhilePrimaryDead(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS flowing (id INT PRIMARY KEY)")
	db, log := chaosDB(t, l, chaosParams)
	labtest.WaitReady(t, db)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)

	_, err = db.ExecContext(ctx, "INSERT INTO flowing VALUES (1)")
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	// The second write reaches no replica.
	for _, r := range l.Replicas() {
		require.NoError(t, l.StopReplication(ctx, r))
	}
	_, err = db.ExecContext(ctx, "INSERT INTO flowing VALUES (2)")
	require.NoError(t, err)
	require.NoError(t, l.Kill(l.Primary()))

	var failed int
	end := time.Now().Add(3 * time.Second)
	reads := 0
	for time.Now().Before(end) {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM flowing").Scan(&n); err != nil {
			failed++
			t.Logf("read failed: %v", err)
			continue
		}
		reads++
		assert.Equal(t, 1, n, "the replicas have the first write")
	}
	assert.Zero(t, failed, "reads failed while both replicas were up")
	assert.Positive(t, reads)
	assert.Positive(t, c.Stats().Routes["primary-away"], "counted: %v", c.Stats().Routes)
	assert.Positive(t, log.count(health.ReadWithoutPrimary), "an event says so")
}

// serverErr is the MySQL error number in err, 0 if none.
func serverErr(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
