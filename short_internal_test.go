package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A prepared statement run again in a BeginTx transaction, on the
// connection it is prepared on, takes the short path; what it counts
// (routes, reads, node queries, statement cache, latency) is what the full
// path counts. A hint, a route log, a replay log or a transaction guard
// sends it down the full path.
func TestShortPath(t *testing.T) {
	cases := []struct {
		name, params string
		hinted       bool
		short        bool
	}{
		{name: "default", short: true},
		{name: "route log", params: "&rwshard.routeLog=true"},
		{name: "replay log", params: "&rwshard.txReplay=true"},
		{name: "idle timeout", params: "&rwshard.txIdleTimeout=1m"},
		{name: "hinted", hinted: true},
	}
	stats := map[string]Stats{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cn := instantConnector(t, &instantBackend{}, 0, tc.params)
			cn.cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx := context.Background()
			if tc.hinted {
				ctx = hint.Primary(ctx)
			}
			dc, err := cn.Connect(ctx)
			require.NoError(t, err)
			c := dc.(*conn)
			defer c.Close()
			upd, err := c.PrepareContext(ctx, "UPDATE t SET a = ? WHERE id = ?")
			require.NoError(t, err)
			sel, err := c.PrepareContext(ctx, "SELECT a FROM t WHERE id = ?")
			require.NoError(t, err)
			args := func(vs ...any) []driver.NamedValue { return checkedArgs(t, c, vs...) }
			tx, err := c.BeginTx(ctx, driver.TxOptions{})
			require.NoError(t, err)
			for i := range 3 {
				a := args(i, 7)
				assert.Equal(t, tc.short && i > 0, upd.(*stmt).shortRoute(ctx, len(a)) != nil, "UPDATE %d: short path", i)
				res, err := upd.(*stmt).ExecContext(ctx, a)
				require.NoError(t, err)
				n, _ := res.RowsAffected()
				assert.Equal(t, int64(1), n)

				a = args(7)
				assert.Equal(t, tc.short && i > 0, sel.(*stmt).shortRoute(ctx, len(a)) != nil, "SELECT %d: short path", i)
				rows, err := sel.(*stmt).QueryContext(ctx, a)
				require.NoError(t, err)
				dest := make([]driver.Value, len(rows.Columns()))
				require.NoError(t, rows.Next(dest))
				require.NoError(t, rows.Close())
			}
			require.NoError(t, tx.Commit())
			assert.True(t, upd.(*stmt).shortRoute(ctx, 0) == nil, "no short path outside a transaction")

			// The next transaction keeps the connection: its first
			// statement, a write, takes the short path, and is recorded
			// for read-your-writes at its commit.
			tx, err = c.BeginTx(ctx, driver.TxOptions{})
			require.NoError(t, err)
			a := args(9, 7)
			assert.Equal(t, tc.short, upd.(*stmt).shortRoute(ctx, len(a)) != nil, "the next transaction's UPDATE: short path")
			_, err = upd.(*stmt).ExecContext(ctx, a)
			require.NoError(t, err)
			assert.True(t, c.pendingWrite, "the transaction's write is recorded for its commit")
			require.NoError(t, tx.Commit())

			// A write's rows (INSERT … RETURNING) record it once closed.
			ret, err := c.PrepareContext(ctx, "INSERT INTO t (a) VALUES (?) RETURNING id")
			require.NoError(t, err)
			for i := range 2 {
				tx, err = c.BeginTx(ctx, driver.TxOptions{})
				require.NoError(t, err)
				a := args(i)
				assert.Equal(t, tc.short && i > 0, ret.(*stmt).shortRoute(ctx, len(a)) != nil, "RETURNING %d: short path", i)
				rows, err := ret.(*stmt).QueryContext(ctx, a)
				require.NoError(t, err)
				assert.False(t, c.pendingWrite, "RETURNING %d: not recorded while its rows are open", i)
				require.NoError(t, rows.Close())
				assert.True(t, c.pendingWrite, "RETURNING %d: recorded once its rows are closed", i)
				require.NoError(t, tx.Commit())
			}
			stats[tc.name] = cn.Stats()
		})
	}
	// Counted alike whichever path ran the statements (the latency sums
	// aside).
	full, short := stats["route log"], stats["default"]
	for i := range full.Nodes {
		for _, h := range []*Histogram{&full.Nodes[i].ReadLatency, &full.Nodes[i].WriteLatency, &short.Nodes[i].ReadLatency, &short.Nodes[i].WriteLatency} {
			h.Sum = 0
		}
		full.Nodes[i].Latency, short.Nodes[i].Latency = 0, 0
	}
	assert.Equal(t, full, short)
	assert.Equal(t, uint64(9), full.Routes["in-transaction"], "every statement of the transaction counted: %v", full.Routes)
}

// A statement that fails on the short path fails as on the full path: a
// server error is the caller's and the transaction goes on (a statement
// the server no longer knows leaves the cache); a broken connection loses
// the session, and says so.
func TestShortPathErrors(t *testing.T) {
	be := &failBackend{}
	cn := instantConnector(t, be, 0, "")
	ctx := context.Background()
	dc, err := cn.Connect(ctx)
	require.NoError(t, err)
	c := dc.(*conn)
	defer c.Close()
	const q = "UPDATE t SET a = ? WHERE id = ?"
	ds, err := c.PrepareContext(ctx, q)
	require.NoError(t, err)
	ps := ds.(*stmt)
	exec := func(short bool) error {
		a := checkedArgs(t, c, 1, 7)
		assert.Equal(t, short, ps.shortRoute(ctx, len(a)) != nil, "short path")
		_, err := ps.ExecContext(ctx, a)
		return err
	}
	_, err = c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	require.NoError(t, exec(false)) // prepared on the transaction's connection

	be.failWith(&mysql.MySQLError{Number: 1062, Message: "Duplicate entry '7' for key 'PRIMARY'"})
	var me *mysql.MySQLError
	require.True(t, errors.As(exec(true), &me), "the server's error, as go-sql-driver returns it")
	assert.Equal(t, uint16(1062), me.Number)
	assert.True(t, c.tx != nil && !c.broken, "the transaction goes on")
	assert.True(t, ps.ent.live, "an ordinary server error keeps the statement cached")

	be.failWith(&mysql.MySQLError{Number: 1615, Message: "Prepared statement needs to be re-prepared"})
	require.True(t, errors.As(exec(true), &me))
	assert.Equal(t, uint16(1615), me.Number)
	assert.False(t, ps.ent.live, "a statement the server wants prepared again leaves the cache")
	be.failWith(nil)
	require.NoError(t, exec(false))
	assert.True(t, ps.ent.live, "prepared again on its next execution, on the full path")
	require.NoError(t, exec(true))

	be.failWith(driver.ErrBadConn)
	assert.ErrorIs(t, exec(true), ErrSessionLost)
	assert.True(t, c.broken && c.sess == nil && c.tx == nil, "the session is lost with its connection")
	assert.ErrorIs(t, c.Ping(ctx), driver.ErrBadConn, "a ping says the logical connection is bad, as BeginTx does")
	st := cn.Stats()
	assert.Equal(t, uint64(1), st.Nodes[0].Errors, "the broken connection counted on the primary")
	assert.Equal(t, uint64(4), st.Nodes[0].StmtHits, "every short-path execution found its statement prepared, the failed ones too")
	assert.Equal(t, uint64(2), st.Nodes[0].StmtMisses, "prepared twice, on the full path")
	assert.Equal(t, uint64(2), st.Nodes[0].ServerErrors[1062]+st.Nodes[0].ServerErrors[1615], "the server's errors counted: %v", st.Nodes[0].ServerErrors)
}

// failBackend is instantBackend whose prepared statements fail with the
// error failWith set, while it is set.
type failBackend struct {
	instantBackend
	err atomic.Pointer[error]
	// delay: how long each of its prepared statements' executions takes
	// (set before they run).
	delay time.Duration
}

func (be *failBackend) failWith(err error) {
	if err == nil {
		be.err.Store(nil)
		return
	}
	be.err.Store(&err)
}

func (be *failBackend) Connect(context.Context) (driver.Conn, error) {
	return &failConn{instantBackendConn: instantBackendConn{be: &be.instantBackend}, fb: be}, nil
}

type failConn struct {
	instantBackendConn
	fb *failBackend
}

func (c *failConn) PrepareContext(context.Context, string) (driver.Stmt, error) {
	return &failStmt{fb: c.fb}, nil
}

type failStmt struct {
	instantBackendStmt
	fb *failBackend
}

func (s *failStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	time.Sleep(s.fb.delay)
	if err := s.fb.err.Load(); err != nil {
		return nil, *err
	}
	return s.instantBackendStmt.ExecContext(ctx, args)
}

// The short path's counts wait in the connection's tally until the
// transaction ends, tallyMax statements at most, or the connection is let
// go; then Stats has every one of them, as the full path counts them.
func TestShortPathTally(t *testing.T) {
	cn := instantConnector(t, &instantBackend{}, 0, "")
	ctx := context.Background()
	dc, err := cn.Connect(ctx)
	require.NoError(t, err)
	c := dc.(*conn)
	upd, err := c.PrepareContext(ctx, "UPDATE t SET a = ? WHERE id = ?")
	require.NoError(t, err)
	sel, err := c.PrepareContext(ctx, "SELECT a FROM t WHERE id = ?")
	require.NoError(t, err)
	run := func(ps driver.Stmt) {
		t.Helper()
		if strings.HasPrefix(ps.(*stmt).q, "SELECT") {
			rows, err := ps.(*stmt).QueryContext(ctx, checkedArgs(t, c, int64(7)))
			require.NoError(t, err)
			require.NoError(t, rows.Close())
			return
		}
		_, err := ps.(*stmt).ExecContext(ctx, checkedArgs(t, c, int64(1), int64(7)))
		require.NoError(t, err)
	}
	type seen struct{ queries, inTx, reads, primaryReads, hits, readLat, writeLat uint64 }
	now := func() seen {
		st := cn.Stats()
		n := st.Nodes[0]
		return seen{n.Queries, st.Routes["in-transaction"], st.Reads, st.PrimaryReads, n.StmtHits, n.ReadLatency.Count, n.WriteLatency.Count}
	}

	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	run(upd) // the full path: prepared on the transaction's connection
	run(sel)
	before := now()
	assert.Equal(t, seen{queries: 2, inTx: 2, reads: 1, primaryReads: 1, hits: 2, readLat: 1, writeLat: 1}, before, "the full path counts at once")
	for range 3 {
		run(upd)
		run(sel)
	}
	assert.Equal(t, before, now(), "the short path's counts wait for the transaction's end")
	assert.Equal(t, uint32(6), c.short.n)
	require.NoError(t, tx.Commit())
	assert.Equal(t, seen{queries: 8, inTx: 8, reads: 4, primaryReads: 4, hits: 8, readLat: 4, writeLat: 4}, now(), "added at commit")
	assert.True(t, c.short.n == 0 && c.short.pending == [2]uint32{} && c.hist.lat == [2]localHist{}, "the tally is empty after the commit")

	// A long transaction: no more than tallyMax statements wait.
	tx, err = c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	for range 2*tallyMax + 1 {
		run(upd)
	}
	assert.Equal(t, uint64(8+2*tallyMax), now().queries, "every full tally added")
	assert.Equal(t, uint32(1), c.short.n)
	require.NoError(t, tx.Rollback())
	assert.Equal(t, uint64(9+2*tallyMax), now().queries, "added at rollback")

	// A connection closed in a transaction: added as it is let go.
	_, err = c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	run(sel)
	run(sel)
	require.NoError(t, c.Close())
	got := now()
	assert.Equal(t, uint64(11+2*tallyMax), got.queries, "added when the connection is let go")
	assert.Equal(t, uint64(6), got.readLat)
}

// The short path is taken only when it would do what the full path does:
// a statement whose arguments CheckNamedValue did not convert, whose cache
// entry is gone, or whose connection's session variables differ from the
// logical connection's goes down the full path, which converts, prepares
// again or applies them; a statement without arguments needs no
// conversion.
func TestShortPathConditions(t *testing.T) {
	cn := instantConnector(t, &instantBackend{}, 0, "")
	ctx := context.Background()
	c, ps := updateOn(t, cn)
	none, err := c.PrepareContext(ctx, "UPDATE t SET a = 1")
	require.NoError(t, err)
	converted := func() []driver.NamedValue { return checkedArgs(t, c, 1, 7) }
	_, err = c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	_, err = ps.ExecContext(ctx, converted()) // the full path remembers the route
	require.NoError(t, err)
	_, err = none.(*stmt).ExecContext(ctx, nil)
	require.NoError(t, err)

	a := converted()
	assert.True(t, ps.shortRoute(ctx, len(a)) != nil, "converted arguments")
	assert.True(t, none.(*stmt).shortRoute(ctx, 0) != nil, "no arguments")
	c.argsChecked = false
	assert.True(t, ps.shortRoute(ctx, len(a)) == nil, "arguments not converted")

	a = converted()
	ps.ent.live = false
	assert.True(t, ps.shortRoute(ctx, len(a)) == nil, "the cache entry is gone")
	ps.ent.live = true

	c.vars.key = "time_zone='+00:00'"
	assert.True(t, ps.shortRoute(ctx, len(a)) == nil, "session variables to apply")
	c.sess.bc.vars.key = c.vars.key
	assert.True(t, ps.shortRoute(ctx, len(a)) != nil, "the same session variables on both")
	c.vars.key, c.sess.bc.vars.key = "", ""

	// A hint made in the process, but not in this statement's context.
	_ = hint.Primary(context.Background())
	require.True(t, hint.Made())
	assert.True(t, ps.shortRoute(ctx, len(a)) != nil, "a hint elsewhere")
	assert.True(t, ps.shortRoute(hint.Primary(ctx), len(a)) == nil, "a hint in the context")

	// A session pinned inside the transaction (a SQL-level prepared
	// statement) is another connection state: the statement's route there
	// is decided once on the full path, then remembered for the short
	// path.
	_, err = c.ExecContext(ctx, "PREPARE s FROM 'SELECT 1'", nil)
	require.NoError(t, err)
	require.True(t, c.dirty, "PREPARE pins the session")
	a = converted()
	assert.True(t, ps.shortRoute(ctx, len(a)) == nil, "pinned: no route remembered yet")
	_, err = ps.ExecContext(ctx, a)
	require.NoError(t, err)
	a = converted()
	assert.True(t, ps.shortRoute(ctx, len(a)) != nil, "pinned: the remembered route")
	_, err = ps.ExecContext(ctx, a)
	require.NoError(t, err)
}

// A write on the short path is recorded for read-your-writes in the
// session of its own context, as on the full path: the connector's scope
// without one, else the Session it carries.
func TestShortPathWriteSession(t *testing.T) {
	cn := instantConnector(t, &instantBackend{}, 0, "")
	ctx := context.Background()
	c, ps := updateOn(t, cn)
	_, err := c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	_, err = ps.ExecContext(ctx, checkedArgs(t, c, 1, 7)) // remembers the route
	require.NoError(t, err)
	c.pendingWrite = false
	a := checkedArgs(t, c, 2, 7)
	require.True(t, ps.shortRoute(ctx, len(a)) != nil, "short path")
	_, err = ps.ExecContext(ctx, a)
	require.NoError(t, err)
	assert.True(t, c.pendingWrite && c.pendingSess == c.cl.global.Load(), "recorded in the connector's scope")

	sctx := WithSession(ctx)
	a = checkedArgs(t, c, 3, 7)
	require.True(t, ps.shortRoute(sctx, len(a)) != nil, "short path")
	_, err = ps.ExecContext(sctx, a)
	require.NoError(t, err)
	assert.True(t, c.pendingSess == SessionFrom(sctx), "recorded in the context's Session")
}

// In a BeginTx transaction, a context found without a hint is
// remembered with its read-your-writes scope, so that the statements
// after it in the same context look up neither; a context with a hint is
// not remembered; none is outside a transaction, or once it ends, so
// that a connection idle in database/sql's pool keeps no caller's
// context alive.
func TestHintOfRemembersContext(t *testing.T) {
	_ = hint.Primary(context.Background()) // hints in use: a lookup walks the chain
	cn := instantConnector(t, &instantBackend{}, 0, "")
	c, ps := updateOn(t, cn)
	type key struct{}
	ctx := context.WithValue(WithSession(context.Background()), key{}, 1)
	_, err := ps.ExecContext(ctx, checkedArgs(t, c, 1, 7))
	require.NoError(t, err)
	assert.Nil(t, c.plainCtx, "outside a transaction: not remembered")

	_, err = c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	assert.True(t, sameCtx(ctx, c.plainCtx), "remembered by BeginTx")
	_, hinted := c.hintOf(ctx)
	require.False(t, hinted)
	assert.True(t, c.ctxScope == SessionFrom(ctx) && c.scope(ctx) == SessionFrom(ctx), "with its session")

	hctx := hint.Primary(ctx)
	h, hinted := c.hintOf(hctx)
	assert.True(t, hinted && h.Route == hint.PrimaryOnly, "the hint found")
	assert.True(t, sameCtx(ctx, c.plainCtx), "a context with a hint is not remembered")
	other := WithSession(ctx)
	assert.True(t, c.scope(other) == SessionFrom(other), "another context's scope is looked up")

	// The transaction's writes take the scope of their own context.
	_, err = ps.ExecContext(ctx, checkedArgs(t, c, 2, 7))
	require.NoError(t, err)
	_, err = ps.ExecContext(other, checkedArgs(t, c, 3, 7))
	require.NoError(t, err)
	assert.True(t, sameCtx(other, c.plainCtx), "the last context remembered")
	assert.True(t, c.pendingSess == SessionFrom(other), "recorded in the last write's session")

	require.NoError(t, (*txn)(c).Commit())
	assert.True(t, c.plainCtx == nil && c.ctxScope == nil, "dropped when the transaction ends")
}

// updateOn opens a logical connection of cn, closed at the test's end,
// and prepares an UPDATE of two arguments on it.
func updateOn(t *testing.T, cn *Connector) (*conn, *stmt) {
	t.Helper()
	dc, err := cn.Connect(context.Background())
	require.NoError(t, err)
	c := dc.(*conn)
	t.Cleanup(func() { c.Close() })
	ds, err := c.PrepareContext(context.Background(), "UPDATE t SET a = ? WHERE id = ?")
	require.NoError(t, err)
	return c, ds.(*stmt)
}

// checkedArgs are vs as database/sql hands them to c's statements: named,
// each passed through c.CheckNamedValue.
func checkedArgs(t *testing.T, c *conn, vs ...any) []driver.NamedValue {
	t.Helper()
	nvs := make([]driver.NamedValue, len(vs))
	for i, v := range vs {
		nvs[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
		require.NoError(t, c.CheckNamedValue(&nvs[i]))
	}
	return nvs
}

// About one short-path statement in shortTimedEvery is timed, at random;
// the first of each latency class on a node always is.
func TestShortClockSample(t *testing.T) {
	c := &conn{}
	s := &c.short
	n1, n2 := &node{}, &node{}
	c.short.on(c, n1, router.ReasonInTransaction)
	assert.True(t, s.due(0), "the first statement is timed")
	c.short.timed(&c.hist, 0, time.Millisecond)
	s.untimed = 5
	assert.True(t, s.due(1), "the first read is timed, whatever the countdown")
	c.short.timed(&c.hist, 1, 2*time.Millisecond)
	s.untimed = 5
	assert.False(t, s.due(0), "a write on the same node waits its turn")
	c.short.on(c, n2, router.ReasonInTransaction)
	assert.True(t, s.due(0), "the first statement on another node is timed")
	c.short.timed(&c.hist, 0, 3*time.Millisecond)
	assert.Equal(t, [2]time.Duration{3 * time.Millisecond, 2 * time.Millisecond}, c.hist.last, "the durations as timed")
	assert.Equal(t, [2]bool{true, false}, s.sampled, "another node's durations are not carried over")
	const n = 80000
	timed := 0
	for i := range n {
		class := i % 2
		if s.due(class) {
			timed++
			c.short.timed(&c.hist, class, time.Millisecond)
		}
	}
	// One in shortTimedEvery on average (16: 5,000 timed, give or take
	// about 70); the bounds are a tenth either side.
	want := n / shortTimedEvery
	assert.True(t, timed > want*9/10 && timed < want*11/10, "%d of %d statements timed, want about 1 in %d", timed, n, shortTimedEvery)
	c.short.on(c, n1, router.ReasonInTransaction)
	c.short.timed(&c.hist, 0, 0)
	s.untimed = 5
	assert.False(t, s.due(0), "a duration of 0 is a duration, not none")
	assert.Equal(t, time.Duration(0), c.hist.last[0])
}

// Untimed statements wait, counted, until the next timed one of their
// class puts them in the bucket of the duration they were counted at.
func TestShortClockSettle(t *testing.T) {
	c := &conn{}
	s := &c.short
	c.short.on(c, &node{}, router.ReasonInTransaction)
	c.short.timed(&c.hist, 0, 3*time.Millisecond)
	s.pending[0] = 4 // the timed statement and three after it
	c.short.timed(&c.hist, 1, 40*time.Millisecond)
	assert.Equal(t, [2]localHist{}, c.hist.lat, "a read's timing leaves the writes pending")
	c.short.timed(&c.hist, 0, 30*time.Millisecond)
	w := c.hist.lat[0]
	assert.Equal(t, uint32(4), w.buckets[bucketOf(3*time.Millisecond)], "counted at 3ms: %v", w.buckets)
	assert.Equal(t, uint32(4), w.count())
	assert.Equal(t, int64(12*time.Millisecond), w.sum)
	assert.Equal(t, [2]uint32{}, s.pending)
}

// Every short-path statement is counted in its latency histogram, the
// untimed ones at the last timed one's duration: with each statement
// taking at least a millisecond, succeeding or failing, none lands below
// it.
func TestShortPathLatencyCounted(t *testing.T) {
	be := &failBackend{delay: time.Millisecond}
	cn := instantConnector(t, be, 0, "")
	ctx := context.Background()
	c, ps := updateOn(t, cn)
	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	const each = 40
	for i := range 2*each + 1 {
		if i == each+1 {
			be.failWith(&mysql.MySQLError{Number: 1062, Message: "Duplicate entry '7' for key 'PRIMARY'"})
		}
		a := checkedArgs(t, c, 1, 7)
		assert.Equal(t, i > 0, ps.shortRoute(ctx, len(a)) != nil, "statement %d: short path", i)
		_, err := ps.ExecContext(ctx, a)
		assert.Equal(t, i > each, err != nil, "statement %d: %v", i, err)
	}
	be.failWith(nil)
	require.NoError(t, tx.Commit())
	h := cn.Stats().Nodes[0].WriteLatency
	assert.Equal(t, uint64(2*each+1), h.Count, "every statement counted")
	assert.Equal(t, uint64(0), h.Counts[0], "none counted below %v: %v", latencyBounds[0], h.Counts)
	assert.True(t, h.Sum >= (2*each+1)*time.Millisecond, "sum %v", h.Sum)
}

// A read on the short path hands database/sql go-sql-driver's own rows,
// no wrapper: its connection stays held through the transaction and
// after it, goes back to its pool once database/sql has reset or closed
// the logical connection (every result set closed by then), and is
// discarded if it is let go before (a result set may still be unread).
// A bounded pool's reads keep the wrapper, which tracks them.
func TestShortPathRawRows(t *testing.T) {
	ctx := context.Background()
	read := func(c *conn, sel *stmt) driver.Rows {
		t.Helper()
		a := checkedArgs(t, c, 7)
		require.True(t, sel.shortRoute(ctx, len(a)) != nil, "short path")
		rows, err := sel.QueryContext(ctx, a)
		require.NoError(t, err)
		return rows
	}
	open := func(maxOpen int) (*Connector, *conn, *stmt) {
		cn := instantConnector(t, &instantBackend{}, maxOpen, "")
		dc, err := cn.Connect(ctx)
		require.NoError(t, err)
		c := dc.(*conn)
		ds, err := c.PrepareContext(ctx, "SELECT a FROM t WHERE id = ?")
		require.NoError(t, err)
		_, err = c.BeginTx(ctx, driver.TxOptions{})
		require.NoError(t, err)
		rows, err := ds.(*stmt).QueryContext(ctx, checkedArgs(t, c, 7)) // the full path remembers the route
		require.NoError(t, err)
		require.NoError(t, rows.Close())
		return cn, c, ds.(*stmt)
	}
	idle := func(cn *Connector) int { return cn.cl.nodes[0].conns.stats().Idle }

	cn, c, sel := open(0)
	rs := read(c, sel)
	_, wrapped := rs.(*rows)
	assert.False(t, wrapped, "the backend's own rows")
	assert.True(t, c.sess.raw)
	require.NoError(t, rs.Close())
	require.NoError(t, (*txn)(c).end(true))
	require.True(t, c.sess != nil, "the primary connection stays held")
	require.NoError(t, c.ResetSession(ctx))
	assert.False(t, c.sess.raw, "reset: every result set closed")

	_, err := c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	require.NoError(t, read(c, sel).Close())
	require.NoError(t, (*txn)(c).end(true))
	require.NoError(t, c.Close())
	assert.Equal(t, 1, idle(cn), "closed by database/sql: pooled")

	cn, c, sel = open(0)
	require.NoError(t, read(c, sel).Close())
	b := c.sess
	c.sess = nil
	b.release(false) // let go in use, as when the node stops being the primary
	assert.Equal(t, 0, idle(cn), "let go before a reset: discarded")
	c.tx = nil
	require.NoError(t, c.Close())

	cn, c, sel = open(4)
	rs = read(c, sel)
	_, wrapped = rs.(*rows)
	assert.True(t, wrapped, "a bounded pool's reads are tracked")
	assert.False(t, c.sess.raw)
	require.NoError(t, rs.Close())
	require.NoError(t, c.Close())
}
