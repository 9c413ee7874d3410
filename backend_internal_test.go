package rwshard

import (
	"context"
	"database/sql/driver"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/require"
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
	bc := &backendConn{Conn: lc, stmts: newStmtCache(16, stats)}
	ctx := context.Background()
	for i := range 10 {
		_, err := bc.cached(ctx, fmt.Sprintf("SELECT %d", i))
		require.NoError(t, err, "query %d", i)
	}
	assert.LessOrEqual(t, lc.open, lc.limit)
	_, err := bc.cached(ctx, "SELECT 9")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), stats.hits.Load())
	assert.Equal(t, uint64(10), stats.misses.Load())
	assert.Positive(t, stats.evictions.Load())
	assert.Equal(t, lc.open, bc.stmts.len(), "every statement the server holds is in the cache")
}
