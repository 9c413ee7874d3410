package rwshard_test

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A transaction that runs no statement for txIdleTimeout is rolled back:
// its row lock is freed for others at once, Commit reports
// ErrTxIdleTimeout, nothing of it was committed, and the events say so. A
// busy transaction is not cut; a text BEGIN transaction is guarded too.
func TestLabTxGuards(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS guarded (id INT PRIMARY KEY, v INT)", "REPLACE INTO guarded VALUES (1, 0), (2, 0)")
	db, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.txIdleTimeout=300ms&rwshard.txWarnAge=200ms"))
	require.NoError(t, err)
	defer db.Close()
	labtest.WaitReady(t, db)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE guarded SET v = 1 WHERE id = 1")
	require.NoError(t, err)
	// Another client waits on the row lock; the idle transaction is cut
	// and the lock freed well before the lock wait timeout (50 s).
	other := direct(t, l.Primary(), "")
	begin := time.Now()
	_, err = other.ExecContext(ctx, "UPDATE guarded SET v = 2 WHERE id = 1")
	require.NoError(t, err)
	waited := time.Since(begin)
	t.Logf("the other client waited %v for the lock", waited)
	assert.Less(t, waited, 5*time.Second)
	err = tx.Commit()
	assert.True(t, errors.Is(err, rwshard.ErrTxIdleTimeout), "Commit: %v", err)
	var v int
	require.NoError(t, other.QueryRowContext(ctx, "SELECT v FROM guarded WHERE id = 1").Scan(&v))
	assert.Equal(t, 2, v, "the idle transaction's update was rolled back")

	// Busy: a statement every 100 ms for 1 s.
	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	for i := range 10 {
		_, err = tx.ExecContext(ctx, "UPDATE guarded SET v = ? WHERE id = 2", i)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, tx.Commit(), "a busy transaction is not cut")

	// Text BEGIN on a *sql.Conn.
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "UPDATE guarded SET v = 7 WHERE id = 2")
	require.NoError(t, err)
	time.Sleep(700 * time.Millisecond)
	_, err = conn.ExecContext(ctx, "COMMIT")
	assert.True(t, errors.Is(err, rwshard.ErrTxIdleTimeout), "COMMIT after idling: %v", err)
	require.NoError(t, other.QueryRowContext(ctx, "SELECT v FROM guarded WHERE id = 2").Scan(&v))
	assert.Equal(t, 9, v, "the text transaction's update was rolled back")

	ev := c.Stats().Events
	assert.Equal(t, uint64(2), ev["tx-idle-timeout"], "%v", ev)
	assert.True(t, ev["long-transaction"] >= 3, "every transaction here lived past txWarnAge: %v", ev)
}
