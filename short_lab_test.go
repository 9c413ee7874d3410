package rwshard_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	db := labtest.OpenPlain(t, l, "rwshard.consistency=eventual")
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

// A read on the short path hands database/sql go-sql-driver's own rows.
// As an application would meet them (plain database/sql in go-tpc's
// shape: a *sql.Conn, statements prepared on it, BeginTx; the user with
// GRANT ALL ON app.* only, no rwshard session in the context):
//   - their columns and values are what go-sql-driver gives direct;
//   - rows left open across Commit fail the commit as they do direct
//     (go-sql-driver's busy buffer), nothing of the transaction is
//     committed, and the connection with the unread rows is never used
//     again: the logical connection's next statement runs on another;
//   - a connection killed while its rows are read fails the read and the
//     commit, nothing is committed, the connection's ping says it is bad
//     (as go-tpc checks before each transaction), and a new *sql.Conn
//     commits once.
//
// That the reads took the short path, raw rows and all, is checked
// through sql.Conn.Raw (HeldRawRows), not assumed.
func TestShortPathRawRowsAsApplication(t *testing.T) {
	l := rwLab.Get(t)
	setup(t, l, "CREATE TABLE IF NOT EXISTS app.rr (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
		"DELETE FROM app.rr",
		"INSERT INTO app.rr SELECT seq, CONCAT('v', seq), 0 FROM seq_1_to_40")
	ctx := labtest.Ctx(t, time.Minute)
	db := labtest.OpenPlain(t, l, "rwshard.consistency=eventual")
	plain := direct(t, l.Primary(), "")
	const q = "SELECT id, v FROM app.rr WHERE id <= ? ORDER BY id"
	type col struct{ name, dbType string }
	read := func(rows *sql.Rows, limit int) ([]col, []string, error) {
		t.Helper()
		cts, err := rows.ColumnTypes()
		require.NoError(t, err)
		var cols []col
		for _, ct := range cts {
			cols = append(cols, col{ct.Name(), ct.DatabaseTypeName()})
		}
		var got []string
		for len(got) < limit && rows.Next() {
			var id int
			var v string
			require.NoError(t, rows.Scan(&id, &v))
			got = append(got, v)
		}
		return cols, got, rows.Err()
	}
	rows, err := plain.QueryContext(ctx, q, 3)
	require.NoError(t, err)
	wantCols, want, err := read(rows, 3)
	require.NoError(t, err)
	require.NoError(t, rows.Close())

	c, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c.Close()
	sel, err := c.PrepareContext(ctx, q)
	require.NoError(t, err)
	upd, err := c.PrepareContext(ctx, "UPDATE app.rr SET n = n + 1 WHERE id = ?")
	require.NoError(t, err)
	connID := func() int64 {
		var id int64
		require.NoError(t, c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
		return id
	}
	n1 := func() int {
		var n int
		require.NoError(t, plain.QueryRowContext(ctx, "SELECT n FROM app.rr WHERE id = 1").Scan(&n))
		return n
	}
	for i := range 3 { // from the second, the short path
		tx, err := c.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = upd.ExecContext(ctx, 1)
		require.NoError(t, err)
		rows, err := sel.QueryContext(ctx, 3)
		require.NoError(t, err)
		cols, got, err := read(rows, 3)
		require.NoError(t, err)
		require.NoError(t, rows.Close())
		assert.Equal(t, wantCols, cols, "transaction %d: the columns as go-sql-driver gives them", i)
		assert.Equal(t, want, got, "transaction %d", i)
		assert.Equal(t, i > 0, heldRaw(c), "transaction %d: go-sql-driver's own rows from the second on", i)
		require.NoError(t, tx.Commit())
	}
	assert.Equal(t, 3, n1(), "three transactions committed")

	// Rows left open across Commit.
	before := connID()
	tx, err := c.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = upd.ExecContext(ctx, 1)
	require.NoError(t, err)
	rows, err = sel.QueryContext(ctx, 3)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.True(t, heldRaw(c), "the open rows are go-sql-driver's own")
	err = tx.Commit()
	require.Error(t, err, "COMMIT with rows unread")
	assert.Contains(t, err.Error(), "busy buffer", "go-sql-driver's own refusal, as direct")
	_ = rows.Close()
	assert.Equal(t, 3, n1(), "nothing of the transaction committed")
	after := connID()
	assert.NotEqual(t, before, after, "the connection with unread rows is not used again")

	// A connection killed while its rows are read: 40 rows of 1 MiB, more
	// than the sockets buffer, the kill after the second.
	killer, err := db.Conn(ctx)
	require.NoError(t, err)
	defer killer.Close()
	big, err := c.PrepareContext(ctx, "SELECT id, REPEAT('x', ?) FROM app.rr WHERE id <= ? ORDER BY id")
	require.NoError(t, err)
	readBig := func(size, limit int, kill int64) (int, error) {
		t.Helper()
		rows, err := big.QueryContext(ctx, size, limit)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id int
			var x []byte
			require.NoError(t, rows.Scan(&id, &x))
			if n++; n == 2 && kill != 0 {
				_, err := killer.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", kill))
				require.NoError(t, err, "the user may kill its own connection")
			}
		}
		return n, rows.Err()
	}
	for range 2 { // the second on the short path
		tx, err := c.BeginTx(ctx, nil)
		require.NoError(t, err)
		n, err := readBig(10, 3, 0)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.NoError(t, tx.Commit())
	}
	require.True(t, heldRaw(c), "the big read takes the short path")
	tx, err = c.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = upd.ExecContext(ctx, 1)
	require.NoError(t, err)
	n, err := readBig(1<<20, 40, connID())
	assert.Error(t, err, "the read the kill cut fails (%d rows read)", n)
	assert.True(t, n < 40, "cut short: %d rows", n)
	assert.Error(t, tx.Commit(), "nothing to commit")
	assert.Equal(t, 3, n1(), "nothing of the killed transaction committed")
	// As go-tpc does: the connection's Ping fails, the program takes
	// another (a *sql.Conn is one connection, direct or through rwshard).
	assert.ErrorIs(t, c.PingContext(ctx), driver.ErrBadConn, "the killed connection, as go-sql-driver says of its own")
	assert.ErrorIs(t, c.Close(), sql.ErrConnDone, "database/sql has let it go")
	c, err = db.Conn(ctx)
	require.NoError(t, err)
	upd, err = c.PrepareContext(ctx, "UPDATE app.rr SET n = n + 1 WHERE id = ?")
	require.NoError(t, err)
	tx, err = c.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = upd.ExecContext(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	assert.Equal(t, 4, n1(), "the next transaction committed once")
}

// heldRaw is HeldRawRows of c's logical connection.
func heldRaw(c *sql.Conn) bool {
	var raw bool
	if err := c.Raw(func(dc any) error { raw = rwshard.HeldRawRows(dc); return nil }); err != nil {
		panic(err)
	}
	return raw
}

// As an application would see the short path in Stats: plain database/sql,
// the user with GRANT ALL ON app.* only, no Session in any context, a
// statement prepared in the transaction and executed n times. Every
// execution is counted once the transaction has committed, in the node's
// statement count, its write latency histogram (one in about 16 timed,
// the rest counted at the last timed duration) and its cache hits; the
// histogram's sum is of real durations, each below the transaction's.
func TestShortPathStatsAsApplication(t *testing.T) {
	l := rwLab.Get(t)
	setup(t, l, "CREATE TABLE IF NOT EXISTS app.ss (id INT PRIMARY KEY)", "DELETE FROM app.ss")
	ctx := labtest.Ctx(t, time.Minute)
	db := labtest.OpenPlain(t, l, "")
	cn, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	primary := func() rwshard.NodeStats {
		for _, ns := range cn.Stats().Nodes {
			if ns.Primary {
				return ns
			}
		}
		t.Fatal("no primary in Stats")
		return rwshard.NodeStats{}
	}
	const n = 300
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	ins, err := tx.PrepareContext(ctx, "INSERT INTO app.ss (id) VALUES (?)")
	require.NoError(t, err)
	before := primary()
	start := time.Now()
	for i := range n {
		_, err := ins.ExecContext(ctx, i)
		require.NoError(t, err)
	}
	took := time.Since(start)
	require.NoError(t, tx.Commit())
	after := primary()

	assert.Equal(t, uint64(n), after.Queries-before.Queries, "statements counted")
	w := after.WriteLatency.Count - before.WriteLatency.Count
	assert.Equal(t, uint64(n), w, "write latency count")
	assert.True(t, after.StmtHits-before.StmtHits >= n-1, "cache hits: %d", after.StmtHits-before.StmtHits)
	sum := after.WriteLatency.Sum - before.WriteLatency.Sum
	// Each statement is counted at a real statement's duration, each below
	// took: the sum is at most n×took. Not 2×took, as it was: one slow
	// timed statement counts the ~16 after it at its duration, which
	// under load took the sum over twice the real total (4 runs of 40
	// with both cores busy).
	assert.True(t, sum > 0 && sum <= time.Duration(n)*took, "latency sum %v for %d statements that took %v in all", sum, n, took)
	var rows int
	require.NoError(t, direct(t, l.Primary(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM app.ss").Scan(&rows))
	assert.Equal(t, n, rows)
}

// As an application would: a session variable set in the middle of a
// transaction, between two runs of a statement prepared in it, through
// plain database/sql as the GRANT ALL ON app.* user, with a context hint
// made elsewhere in the program (another request's) and none in this
// one's, so that the transaction's context is looked up (once, at
// BeginTx: hintOf) and the short path compares it with the one
// remembered. Every execution after the SET sees it, before it none
// does. The SET is applied on the transaction's connection at once
// (runSet), so the short path finds the two sides' variables alike: which
// path a statement takes is TestShortPathConditions'; this is what the
// user sees.
func TestShortPathSessionVarsAsApplication(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	_ = hint.Primary(context.Background()) // another request's hint
	db := labtest.OpenPlain(t, l, "")
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	tz, err := tx.PrepareContext(ctx, "SELECT @@time_zone")
	require.NoError(t, err)
	read := func() string {
		var v string
		require.NoError(t, tz.QueryRowContext(ctx).Scan(&v))
		return v
	}
	first := read()
	require.NotEqual(t, "+03:00", first)
	for range 3 {
		assert.Equal(t, first, read(), "before the SET")
	}
	_, err = tx.ExecContext(ctx, "SET time_zone = '+03:00'")
	require.NoError(t, err)
	for range 4 {
		assert.Equal(t, "+03:00", read(), "after the SET")
	}
	require.NoError(t, tx.Commit())
}

// As an application would: a web service's transactions, each in its
// request's context (middleware values and a read-your-writes Session),
// in a program that makes hints in other requests, through plain
// database/sql as the GRANT ALL ON app.* user. A statement prepared once
// runs twice in every transaction (from its second run on a connection,
// on the short path, with the context looked up once per transaction);
// after the commit, a read in the same Session must see the transaction's
// last write, with both replicas two seconds behind: a write recorded in
// the wrong scope sends the read to a replica that has not got it.
func TestShortPathSessionWritesAsApplication(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	setup(t, l, "CREATE TABLE app.tw (k INT PRIMARY KEY, v INT)")
	ctx := labtest.Ctx(t, 2*time.Minute)
	for _, r := range l.Replicas() {
		require.NoError(t, l.Lag(ctx, r, 2*time.Second))
	}
	_ = hint.Primary(context.Background()) // another request's hint
	type mwKey int
	for _, mode := range []string{"session", "causal"} {
		t.Run(mode, func(t *testing.T) {
			db := labtest.OpenPlain(t, l, "rwshard.consistency="+mode)
			up, err := db.PrepareContext(ctx, "REPLACE INTO app.tw VALUES (?, ?)")
			require.NoError(t, err)
			const txns, workers = 400, 4
			base := map[string]int{"session": 0, "causal": 1_000_000}[mode]
			var stale atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := w; i < txns; i += workers {
						req := ctx
						for j := range 4 {
							req = context.WithValue(req, mwKey(j), i)
						}
						req = rwshard.WithSession(req)
						k := base + i
						tx, err := db.BeginTx(req, nil)
						if err != nil {
							t.Errorf("begin %d: %v", k, err)
							return
						}
						st := tx.StmtContext(req, up)
						_, err = st.ExecContext(req, k, -1)
						if err == nil {
							_, err = st.ExecContext(req, k, i)
						}
						if err == nil {
							err = tx.Commit()
						}
						if err != nil {
							t.Errorf("transaction %d: %v", k, err)
							tx.Rollback()
							return
						}
						var v int
						err = db.QueryRowContext(req, "SELECT v FROM app.tw WHERE k = ?", k).Scan(&v)
						if errors.Is(err, sql.ErrNoRows) || err == nil && v != i {
							stale.Add(1)
						} else if err != nil {
							t.Errorf("read %d: %v", k, err)
							return
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%s: %d transactions of two writes, then a read in their Session: %d stale", mode, txns, stale.Load())
			assert.Zero(t, stale.Load(), "reads that missed their own Session's transaction")
		})
	}
}
