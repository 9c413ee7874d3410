package rwshard

import (
	"context"
	"database/sql/driver"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limitedConn is a driver connection whose server allows limit prepared
// statements at once (max_prepared_stmt_count), then answers 1461.
type limitedConn struct {
	driver.Conn
	open, limit int
}

func (c *limitedConn) Prepare(q string) (driver.Stmt, error) {
	if c.open >= c.limit {
		return nil, &mysql.MySQLError{Number: 1461, Message: "Can't create more than max_prepared_stmt_count statements"}
	}
	c.open++
	return &countedStmt{c: c}, nil
}

type countedStmt struct {
	driver.Stmt
	c *limitedConn
}

func (s *countedStmt) Close() error { s.c.open--; return nil }

// The statement cache counts hits, misses and evictions, and a server
// without room for another statement (1461) makes it give back half of
// its statements instead of failing the query.
func TestStmtCacheFull(t *testing.T) {
	stats := &stmtStats{}
	lc := &limitedConn{limit: 4}
	bc := newBackendConn(lc, nil)
	bc.stmts = newStmtCache(16, stats)
	ctx := context.Background()
	for i := range 10 {
		_, err := bc.cached(ctx, fmt.Sprintf("SELECT %d", i), nil)
		require.NoError(t, err, "query %d", i)
	}
	assert.LessOrEqual(t, lc.open, lc.limit)
	_, err := bc.cached(ctx, "SELECT 9", nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), stats.hits.Load())
	assert.Equal(t, uint64(10), stats.misses.Load())
	assert.Positive(t, stats.evictions.Load())
	assert.Equal(t, lc.open, bc.stmts.len(), "every statement the server holds is in the cache")
}

// The cache evicts the least recently used statement, not the first
// prepared; when the server is full it gives back the older half by use.
func TestStmtCacheEvictsLeastRecentlyUsed(t *testing.T) {
	lc := &limitedConn{limit: 100}
	bc := newBackendConn(lc, nil)
	bc.stmts = newStmtCache(3, &stmtStats{})
	ctx := context.Background()
	use := func(qs ...string) {
		for _, q := range qs {
			_, err := bc.cached(ctx, q, nil)
			require.NoError(t, err, q)
		}
	}
	cachedNow := func(q string) bool { _, ok := bc.stmts.m[q]; return ok }
	use("SELECT 1", "SELECT 2", "SELECT 3", "SELECT 1") // SELECT 2 is now the least recent
	use("SELECT 4")
	assert.False(t, cachedNow("SELECT 2"), "the least recently used statement is evicted")
	for _, q := range []string{"SELECT 1", "SELECT 3", "SELECT 4"} {
		assert.True(t, cachedNow(q), q)
	}
	use("SELECT 3", "SELECT 1") // by use: 4, 3, 1
	require.True(t, bc.stmts.shrink())
	assert.Equal(t, 2, bc.stmts.len())
	assert.False(t, cachedNow("SELECT 4"), "shrink gives back the least recently used first")
	assert.Equal(t, 2, lc.open, "evicted statements are closed on the server")
}

// A prepared statement remembers its cache entry on the connection it
// last ran on (no lookup by text next time), and never uses an entry the
// cache has closed since (evicted, dropped) or one of another connection.
func TestStmtCacheRemembered(t *testing.T) {
	ctx := context.Background()
	stats := &stmtStats{}
	lc := &limitedConn{limit: 100}
	bc := newBackendConn(lc, nil)
	bc.stmts = newStmtCache(2, stats)
	ps := &stmt{q: "SELECT 1"}
	first, err := bc.cached(ctx, ps.q, ps)
	require.NoError(t, err)
	again, err := bc.cached(ctx, ps.q, ps)
	require.NoError(t, err)
	assert.True(t, first == again, "the remembered statement is the cached one")
	assert.Equal(t, uint64(1), stats.hits.Load(), "a remembered entry counts as a hit")

	// Two more statements evict SELECT 1 (and close it on the server).
	for _, q := range []string{"SELECT 2", "SELECT 3"} {
		_, err := bc.cached(ctx, q, nil)
		require.NoError(t, err)
	}
	assert.False(t, ps.ent.live, "the evicted entry is no longer live")
	fresh, err := bc.cached(ctx, ps.q, ps)
	require.NoError(t, err)
	assert.False(t, fresh == first, "an evicted statement is prepared again, not reused")
	assert.Equal(t, uint64(4), stats.misses.Load())

	// A dropped statement (it failed) is not reused either.
	bc.stmts.drop(ps.q)
	dropped := ps.ent
	_, err = bc.cached(ctx, ps.q, ps)
	require.NoError(t, err)
	assert.False(t, dropped == ps.ent, "a dropped entry is replaced")
	assert.Equal(t, uint64(5), stats.misses.Load())

	// On another connection the statement is that connection's own.
	other := newBackendConn(&limitedConn{limit: 100}, nil)
	other.stmts = newStmtCache(2, stats)
	there, err := other.cached(ctx, ps.q, ps)
	require.NoError(t, err)
	assert.True(t, ps.bc == other, "the statement now remembers the other connection")
	assert.False(t, there == fresh, "each connection has its own server-side statement")

	// Closing the connection's cache ends every remembered entry.
	other.stmts.closeAll()
	assert.False(t, ps.ent.live)
	assert.Equal(t, 0, lc.open-bc.stmts.len(), "every statement the server holds is in the cache")
}

// oldStmt is a statement of a driver written before Go 1.8: no context
// methods.
type oldStmt struct{ execs, queries int }

func (*oldStmt) Close() error  { return nil }
func (*oldStmt) NumInput() int { return -1 }
func (s *oldStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.execs++
	return driver.RowsAffected(len(args)), nil
}
func (s *oldStmt) Query([]driver.Value) (driver.Rows, error) {
	s.queries++
	return &instantBackendRows{}, nil
}

// A cached statement of such a driver runs through its Exec and Query,
// with its arguments.
func TestStmtCacheOldDriver(t *testing.T) {
	c := newStmtCache(4, nil)
	st := &oldStmt{}
	cs := c.put("UPDATE t SET a = ? WHERE b = ?", st)
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(1)}, {Ordinal: 2, Value: "x"}}
	res, err := cs.execer.ExecContext(context.Background(), args)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the arguments reached Exec")
	rows, err := cs.queryer.QueryContext(context.Background(), args)
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	assert.Equal(t, 1, st.execs)
	assert.Equal(t, 1, st.queries)
}
