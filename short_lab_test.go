package rwshard_test

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/require"
)

// As an application would: plain database/sql, the user with GRANT ALL ON
// app.* and nothing more, statements prepared in the transaction
// (tx.PrepareContext). Executed again, they take the short path. The
// connection is killed while one of them runs: that statement fails at
// once, nothing of the transaction is committed or retried, and the next
// transaction runs on a fresh connection.
func TestShortPathKilledWhileRunning(t *testing.T) {
	l := rwLab.Get(t)
	setup(t, l, "CREATE TABLE IF NOT EXISTS app.sp (id INT PRIMARY KEY, v INT)", "REPLACE INTO app.sp VALUES (1, 0)")
	ctx := labtest.Ctx(t, time.Minute)
	db, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, "rwshard.consistency=eventual"))
	require.NoError(t, err)
	defer db.Close()
	labtest.WaitReady(t, db)
	killer, err := db.Conn(ctx)
	require.NoError(t, err)
	defer killer.Close()

	cn, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	inTx := func() uint64 { return cn.Stats().Routes["in-transaction"] }
	before := inTx()

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	var id int64
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
	upd, err := tx.PrepareContext(ctx, "UPDATE app.sp SET v = v + 1 WHERE id = ?")
	require.NoError(t, err)
	slow, err := tx.PrepareContext(ctx, "SELECT SLEEP(?)")
	require.NoError(t, err)
	for range 3 {
		_, err := upd.ExecContext(ctx, 1)
		require.NoError(t, err)
	}
	var slept int
	require.NoError(t, slow.QueryRowContext(ctx, 0).Scan(&slept)) // its route is remembered from now on

	killed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, err := killer.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		killed <- err
	}()
	err = slow.QueryRowContext(ctx, 30).Scan(&slept)
	require.NoError(t, <-killed, "the user may kill its own connection")
	assert.ErrorIs(t, err, rwshard.ErrSessionLost, "the statement the kill cut says its session is gone")
	_, err = upd.ExecContext(ctx, 1)
	assert.ErrorIs(t, err, driver.ErrBadConn, "the transaction's next statement: nothing sent, as after a broken go-sql-driver connection")
	assert.Error(t, tx.Commit(), "nothing to commit")
	// Counted, the short path's statements too: CONNECTION_ID(), the 3
	// UPDATEs, SLEEP(0) and the killed SLEEP(30); the UPDATE after the
	// kill was not sent.
	assert.Equal(t, uint64(6), inTx()-before, "every statement the killed transaction ran is in Stats")

	var v int
	require.NoError(t, direct(t, l.Primary(), "").QueryRowContext(ctx, "SELECT v FROM app.sp WHERE id = 1").Scan(&v))
	assert.Equal(t, 0, v, "none of the killed transaction's updates committed")

	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	upd, err = tx.PrepareContext(ctx, "UPDATE app.sp SET v = v + 1 WHERE id = ?")
	require.NoError(t, err)
	for range 2 {
		_, err := upd.ExecContext(ctx, 1)
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
	require.NoError(t, direct(t, l.Primary(), "").QueryRowContext(ctx, "SELECT v FROM app.sp WHERE id = 1").Scan(&v))
	assert.Equal(t, 2, v, "the next transaction, on a fresh connection, committed once")
}

// The argument types rwshard converts itself on a held connection
// (convertPlain) come out as go-sql-driver's own conversion makes them, on
// a real go-sql-driver connection; any other type is left to it.
func TestConvertPlainIsGoSQLDrivers(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db, err := sql.Open("mysql", labtest.PlainNodeDSN(l.Primary()))
	require.NoError(t, err)
	defer db.Close()
	c, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c.Close()
	type id int
	n := 7
	now := time.Now()
	plain := []any{nil, int(-7), int32(1 << 30), int64(1 << 40),
		uint(7), uint32(1 << 31), uint64(1<<63 + 5), 2.25, true, "s", []byte("b"), []byte(nil), now}
	other := []any{id(3), &n, json.RawMessage(`{}`), sql.NullInt64{Int64: 1, Valid: true}, []int{1},
		int8(-8), uint16(60000), float32(1.5)}
	require.NoError(t, c.Raw(func(dc any) error {
		checker := dc.(driver.NamedValueChecker)
		for _, v := range plain {
			want := driver.NamedValue{Ordinal: 1, Value: v}
			require.NoError(t, checker.CheckNamedValue(&want))
			got := driver.NamedValue{Ordinal: 1, Value: v}
			require.True(t, rwshard.ConvertPlain(&got), "%T is converted", v)
			assert.Equal(t, fmt.Sprintf("%T %#v", want.Value, want.Value), fmt.Sprintf("%T %#v", got.Value, got.Value), "%T", v)
		}
		for _, v := range other {
			got := driver.NamedValue{Ordinal: 1, Value: v}
			require.False(t, rwshard.ConvertPlain(&got), "%T is go-sql-driver's to convert", v)
			assert.Equal(t, fmt.Sprintf("%#v", v), fmt.Sprintf("%#v", got.Value), "%T left as it was", v)
		}
		return nil
	}))
}
