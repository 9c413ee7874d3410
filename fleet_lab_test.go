package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// lowMaxConnections sets n's max_connections to what it has in use now
// plus room, restored when the test ends, and returns it.
func lowMaxConnections(t *testing.T, n *lab.Node, room int) int {
	t.Helper()
	ctx := labtest.Ctx(t, 10*time.Second)
	var old int
	require.NoError(t, n.Admin().QueryRowContext(ctx, "SELECT @@max_connections").Scan(&old))
	limit := int(statusCounter(t, n, "Threads_connected")) + room
	require.NoError(t, n.Exec(ctx, "SET GLOBAL max_connections = "+strconv.Itoa(limit)))
	t.Cleanup(func() {
		require.NoError(t, n.Exec(context.Background(), "SET GLOBAL max_connections = "+strconv.Itoa(old)))
	})
	return limit
}

// fleetLoad runs writers goroutines on each db for d, each a loop of
// statements on the primary, and counts what they saw.
type fleetLoad struct {
	ok, budget, tooMany, other atomic.Int64
	firstOther                 atomic.Value
}

func (f *fleetLoad) run(ctx context.Context, dbs []*sql.DB, writers int, d time.Duration, q string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for _, db := range dbs {
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					_, err := db.ExecContext(ctx, q)
					var me *mysql.MySQLError
					switch {
					case err == nil:
						f.ok.Add(1)
					case errors.As(err, &me) && me.Number == 1040:
						f.tooMany.Add(1)
					case ctx.Err() != nil: // the run's end
					case errors.Is(err, rwshard.ErrConnBudget):
						f.budget.Add(1)
					default:
						f.other.Add(1)
						f.firstOther.CompareAndSwap(nil, err.Error())
					}
				}
			}()
		}
	}
	wg.Wait()
}

// TestLabConnBudget: a fleet of connectors whose configured pools
// (fleetSize × maxOpenConns) far exceed the server's max_connections
// never makes the server refuse a connection (1040) under load: each
// caps its pool at its share, and a statement that finds the share used
// up waits, then fails with ErrConnBudget naming the node and the limit.
func TestLabConnBudget(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	p := l.Primary()
	const fleet, perProcess, writers = 6, 40, 40
	maxConns := lowMaxConnections(t, p, 60)
	refusedBefore := statusCounter(t, p, "Connection_errors_max_connections")

	var dbs []*sql.DB
	for range fleet {
		dbs = append(dbs, openLab(t, l, fmt.Sprintf("rwshard.fleetSize=%d&rwshard.maxOpenConns=%d&rwshard.connWait=100ms", fleet, perProcess)))
	}
	var load fleetLoad
	load.run(ctx, dbs, writers, 3*time.Second, "/* rwshard:primary */ SELECT SLEEP(0.05)")

	share := (maxConns-maxConns/10)/fleet - 1 // less the connector's probe connection
	for i, db := range dbs {
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)
		pool := c.Stats().Nodes[0].Pool
		assert.Equal(t, share, pool.MaxOpenConnections, "connector %d: the limit is its share", i)
		assert.LessOrEqual(t, pool.OpenConnections, share, "connector %d", i)
	}
	t.Logf("max_connections=%d share=%d: ok=%d budget=%d 1040=%d other=%d", maxConns, share,
		load.ok.Load(), load.budget.Load(), load.tooMany.Load(), load.other.Load())
	assert.Zero(t, load.tooMany.Load(), "errors 1040 reached the application")
	assert.Zero(t, statusCounter(t, p, "Connection_errors_max_connections")-refusedBefore, "the server refused connections as full")
	assert.Zero(t, load.other.Load(), "other errors: %v", load.firstOther.Load())
	assert.Positive(t, load.ok.Load())
	assert.Positive(t, load.budget.Load(), "%d writers on %d connections never waited past connWait", writers, share)

	// The typed error names the node and the limit.
	var held []*sql.Tx
	for range share {
		tx, err := dbs[0].BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.NoError(t, err)
		held = append(held, tx)
	}
	_, err := dbs[0].ExecContext(ctx, "/* rwshard:primary */ SELECT 1")
	require.ErrorIs(t, err, rwshard.ErrConnBudget)
	t.Log(err)
	assert.ErrorContains(t, err, "connections to primary")
	assert.ErrorContains(t, err, fmt.Sprintf("limit of %d connections", share))
	assert.ErrorContains(t, err, "rwshard.fleetSize=6")
	assert.ErrorContains(t, err, "rwshard.connWait (100ms)")
	for _, tx := range held {
		require.NoError(t, tx.Rollback())
	}
}

// TestLabLongHold: a result set left open, and a transaction left open,
// past rwshard.holdWarn raise one long-hold event each, naming the
// statement that began the hold and the caller's file:line, and are
// counted in Stats.LongHolds while they last; their times go to
// Stats.HoldTimes. With rwshard.holdLimit the hold is ended: the next row
// or statement gets ErrHoldLimit.
func TestLabLongHold(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	const cursor = "SELECT seq, REPEAT('x', 100) FROM seq_1_to_10000"

	longHolds := func(c *rwshard.Connector) int64 { return c.Stats().LongHolds }
	t.Run("warn", func(t *testing.T) {
		db, events := chaosDB(t, l, "rwshard.holdWarn=1s")
		labtest.WaitReady(t, db)
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)

		rows, err := db.QueryContext(ctx, cursor) // the cursor's line
		_, _, line, _ := runtime.Caller(0)
		require.NoError(t, err)
		require.True(t, rows.Next())
		require.Eventually(t, func() bool { return longHolds(c) == 1 }, 5*time.Second, 20*time.Millisecond, "the gauge")
		time.Sleep(time.Second) // held 2 s in all, past the bound twice over
		assert.Equal(t, int64(1), longHolds(c))
		require.NoError(t, rows.Close())
		assert.Zero(t, longHolds(c), "the gauge after Close")

		var holds []health.Event
		for _, e := range events.all() {
			if e.Kind == health.LongHold {
				holds = append(holds, e)
			}
		}
		require.Len(t, holds, 1, "one event for one hold")
		assert.Contains(t, holds[0].Detail, "a result set held a connection for")
		assert.Contains(t, holds[0].Detail, `begun by "SELECT seq, REPEAT('?', 100) FROM seq_1_to_10000" at `, "the statement, redacted")
		assert.Contains(t, holds[0].Detail, fmt.Sprintf("fleet_lab_test.go:%d", line-1))
		h := c.Stats().HoldTimes
		assert.Positive(t, h.Count)
		assert.GreaterOrEqual(t, h.Sum, 2*time.Second, "the held cursor's time")

		tx, err := db.BeginTx(ctx, nil) // the transaction's line
		_, _, line, _ = runtime.Caller(0)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return longHolds(c) == 1 }, 5*time.Second, 20*time.Millisecond, "the gauge")
		require.NoError(t, tx.Commit())
		assert.Zero(t, longHolds(c))
		e, ok := events.first(health.LongHold, "primary", time.Time{})
		require.True(t, ok, "%v", events.all())
		assert.Contains(t, e.Detail, "a transaction held a connection for")
		assert.Contains(t, e.Detail, `begun by "BEGIN" at `)
		assert.Contains(t, e.Detail, fmt.Sprintf("fleet_lab_test.go:%d", line-1))
	})

	t.Run("limit", func(t *testing.T) {
		db, events := chaosDB(t, l, "rwshard.holdLimit=1s")
		labtest.WaitReady(t, db)
		rows, err := db.QueryContext(ctx, cursor)
		require.NoError(t, err)
		require.True(t, rows.Next())
		require.Eventually(t, func() bool { return events.count(health.LongHold) == 1 }, 5*time.Second, 20*time.Millisecond)
		for rows.Next() {
		}
		require.ErrorIs(t, rows.Err(), rwshard.ErrHoldLimit)
		rows.Close()

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return events.count(health.LongHold) == 2 }, 5*time.Second, 20*time.Millisecond)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.ErrorIs(t, err, rwshard.ErrHoldLimit)
		require.ErrorIs(t, tx.Commit(), rwshard.ErrHoldLimit)
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT 1").Scan(&n), "the pool goes on")
	})
}
