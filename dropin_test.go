package rwshard_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Code that never heard of rwshard reads its own writes: no session in
// the context, default settings, replicas delayed by MASTER_DELAY=2. Each
// write is read back at once through the same *sql.DB; none is stale.
// With every replica delayed the reads go to the primary (a read the
// test reaches more than a second after its write, on a loaded machine,
// may find a replica that has it); with one
// replica healthy, they wait there for the write's GTID and stay off the
// primary. The writes run in autocommit, in transactions (whose GTID
// rwshard reads only when a read needs it, on the connection that
// committed), and in transactions on a connection the reads never use
// (the read then fetches the primary's position).
func TestLabDropInReadYourWrites(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 3*time.Minute)
	setup(t, l, "CREATE TABLE ryw (id INT PRIMARY KEY, v INT)")
	styles := []struct {
		name  string
		write func(db *sql.DB, held *sql.Conn, id, v int) error
	}{
		{"autocommit", func(db *sql.DB, _ *sql.Conn, id, v int) error {
			_, err := db.ExecContext(ctx, "INSERT INTO ryw (id, v) VALUES (?, ?)", id, v)
			return err
		}},
		{"transaction", func(db *sql.DB, _ *sql.Conn, id, v int) error {
			return inTx(db.BeginTx(ctx, nil))("ryw", id, v)
		}},
		{"transaction elsewhere", func(_ *sql.DB, held *sql.Conn, id, v int) error {
			return inTx(held.BeginTx(ctx, nil))("ryw", id, v)
		}},
	}
	id := 0
	for _, tc := range []struct {
		name    string
		delayed []*lab.Node
	}{
		{"every replica delayed", l.Replicas()},
		{"one replica delayed", l.Replicas()[:1]},
	} {
		for _, r := range tc.delayed {
			require.NoError(t, l.Lag(ctx, r, 2*time.Second))
		}
		allDelayed := len(tc.delayed) == len(l.Replicas())
		for _, style := range styles {
			db, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, "rwshard.probeInterval=200ms"))
			require.NoError(t, err)
			labtest.WaitReady(t, db)
			c, err := rwshard.ConnectorOf(ctx, db)
			require.NoError(t, err)
			held, err := db.Conn(ctx)
			require.NoError(t, err)
			time.Sleep(time.Second) // the delayed replicas' lag is measured
			// early: with every replica delayed, reads a replica served
			// within a second of the start of their write: no replica
			// can have the write by then (MASTER_DELAY counts from the
			// event's timestamp, the statement's start in whole seconds,
			// so a 2-s delay holds a write back for more than a second
			// after the test sent it). A read the test gets to later (a
			// stall on a loaded machine) may find a replica that has the
			// write, and rightly use it.
			stale, early := 0, 0
			const n = 30
			for i := range n {
				id++
				sent := time.Now()
				require.NoError(t, style.write(db, held, id, i))
				before := c.Stats().PrimaryReads
				var v sql.NullInt64
				require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM ryw WHERE id = ?", id).Scan(&v))
				if !v.Valid || v.Int64 != int64(i) {
					stale++
				}
				if allDelayed && c.Stats().PrimaryReads == before && time.Since(sent) < time.Second {
					early++
				}
			}
			st := c.Stats()
			what := tc.name + ", " + style.name
			t.Logf("%s: %d of %d reads stale; primary served %d of %d reads; routes %v", what, stale, n, st.PrimaryReads, st.Reads, st.Routes)
			assert.Zero(t, stale, "%s: stale reads", what)
			if allDelayed {
				assert.Zero(t, early, "%s: no replica can have a write within a second of it: the primary (routes %v)", what, st.Routes)
				assert.Less(t, st.Reads-st.PrimaryReads, uint64(n/2), "%s: the primary served most reads", what)
			} else {
				var waits, timeouts uint64
				var waited time.Duration
				for _, ns := range st.Nodes {
					waits, timeouts, waited = waits+ns.Waits, timeouts+ns.WaitTimeouts, waited+ns.WaitTime
				}
				t.Logf("%s: causal waits %d (%v), timed out %d", what, waits, waited, timeouts)
				assert.True(t, waits > 0 && waited > 0, "%s: the reads waited on the replica: Stats counts it", what)
				// The healthy replica waited for each write; a wait that
				// timed out (causalTimeout, on a loaded machine) is the
				// only reason for a read on the primary.
				assert.Equal(t, timeouts, st.PrimaryReads, "%s: the healthy replica waited for each write: %v", what, fmt.Sprint(st.Routes))
				assert.Less(t, timeouts, uint64(n/2))
			}
			held.Close()
			db.Close()
		}
		for _, r := range tc.delayed {
			require.NoError(t, l.Lag(ctx, r, 0))
		}
	}
}

// inTx returns a write of one row in the transaction tx, committed.
func inTx(tx *sql.Tx, err error) func(table string, id, v int) error {
	return func(table string, id, v int) error {
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO "+table+" (id, v) VALUES (?, ?)", id, v); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
}

// Causal mode costs no statement on the primary: each commit's GTID comes
// back in the commit's own OK packet (session tracking), so neither the
// transactions nor the read after them send a SELECT there. Probes are
// off the clock (one at start), so the primary's Com_select counts
// rwshard's statements only.
func TestLabCausalCommitsWithoutReads(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS owed (id INT PRIMARY KEY, v INT)", "TRUNCATE owed")
	db, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, "rwshard.probeInterval=1h"))
	require.NoError(t, err)
	defer db.Close()
	labtest.WaitReady(t, db)
	db.SetMaxOpenConns(1) // one logical connection: one held primary connection
	before := statusCounter(t, l.Primary(), "Com_select")
	const n = 20
	for i := range n {
		require.NoError(t, inTx(db.BeginTx(ctx, nil))("owed", i, i))
	}
	during := statusCounter(t, l.Primary(), "Com_select")
	assert.Equal(t, before, during, "SELECTs on the primary during %d committed transactions", n)
	var got int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM owed").Scan(&got))
	assert.Equal(t, n, got, "the read after them sees every commit")
	// The read knew the newest commit's GTID and ran on a replica.
	assert.Equal(t, during, statusCounter(t, l.Primary(), "Com_select"), "SELECTs on the primary for the read")
}

// txEnds hands over each BeginTx transaction's end (a TxTracer).
type txEnds chan rwshard.TxEnd

func (txEnds) StatementStart(ctx context.Context, _ rwshard.StatementStart) context.Context {
	return ctx
}
func (txEnds) StatementEnd(context.Context, rwshard.StatementEnd)             {}
func (txEnds) TxStart(ctx context.Context, _ rwshard.TxStart) context.Context { return ctx }
func (t txEnds) TxEnd(_ context.Context, e rwshard.TxEnd)                     { t <- e }

// A statement of a transaction whose context ends mid-flight, as
// go-sql-driver's TestContextCancelBegin runs it: go-sql-driver closes the
// connection, and the statement returns context.Canceled. As direct, the
// *sql.Conn is then dead: once database/sql has rolled the transaction
// back (on a goroutine of its own, which can run before or after the
// caller's next call), the next BeginTx on it returns driver.ErrBadConn.
// Before, when that rollback came first, rwshard took a fresh primary
// connection and began the transaction: go-sql-driver's suite saw nil, and
// then hung in Conn.Close behind the transaction nobody ended (about one
// run in 40). Here the rollback always comes first. Two ways in:
//   - a text statement, with a tracer: the test waits for the
//     transaction's end, which the tracer sees even though the
//     transaction was lost;
//   - a prepared statement in the second transaction that runs it, as
//     go-tpc runs its statements, through sql.Open with no tracer (a
//     tracer turns the short path off): that the short path runs there is
//     checked (a prepared read's raw rows, HeldRawRows), and the test
//     waits until rwshard's connection has no transaction (TxOpen).
func TestLabCancelledTxStatementKillsConnection(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS cancelled_tx (v INT)")
	const insert = "INSERT INTO cancelled_tx VALUES (? + SLEEP(?))"
	// dies runs a statement in a transaction on conn that its context
	// cancels mid-flight, waits until database/sql has rolled it back
	// (rolledBack), and checks what the connection says after.
	dies := func(t *testing.T, db *sql.DB, conn *sql.Conn, exec func(*sql.Tx, context.Context, ...any) error, rolledBack func()) {
		t.Helper()
		tctx, cancel := context.WithCancel(ctx)
		tx, err := conn.BeginTx(tctx, nil)
		require.NoError(t, err)
		time.AfterFunc(100*time.Millisecond, cancel)
		err = exec(tx, tctx, 2, 1)
		assert.True(t, err == context.Canceled, "the statement's error is the context's, as direct: %v", err)
		rolledBack()
		tx2, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if tx2 != nil {
			tx2.Rollback() // a transaction the caller never expected; Conn.Close would wait for it
		}
		assert.True(t, err == driver.ErrBadConn, "BeginTx on the connection that died: %v", err)
		conn.Close()
		_, err = db.ExecContext(ctx, insert, 3, 0)
		assert.NoError(t, err, "the next connection works")
	}

	t.Run("text", func(t *testing.T) {
		ends := make(txEnds, 16)
		db := labtest.OpenTraced(t, labtest.PlainDSN(l, ""), ends)
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		exec := func(tx *sql.Tx, ctx context.Context, args ...any) error {
			_, err := tx.ExecContext(ctx, insert, args...)
			return err
		}
		dies(t, db, conn, exec, func() {
			select {
			case e := <-ends:
				assert.False(t, e.Commit, "database/sql rolled it back")
			case <-time.After(10 * time.Second):
				t.Fatal("no end traced for the transaction whose context ended")
			}
		})
	})
	t.Run("prepared", func(t *testing.T) {
		db, err := sql.Open("rwshard", labtest.PlainDSN(l, ""))
		require.NoError(t, err)
		defer db.Close()
		labtest.WaitReady(t, db)
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		ins, err := conn.PrepareContext(ctx, insert)
		require.NoError(t, err)
		sel, err := conn.PrepareContext(ctx, "SELECT COUNT(*) FROM cancelled_tx WHERE v = ?")
		require.NoError(t, err)
		exec := func(tx *sql.Tx, ctx context.Context, args ...any) error {
			_, err := tx.StmtContext(ctx, ins).ExecContext(ctx, args...)
			if err != nil {
				return err
			}
			var n int
			return tx.StmtContext(ctx, sel).QueryRowContext(ctx, 1).Scan(&n)
		}
		// The first transaction prepares both on the backend connection.
		tx, err := conn.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, exec(tx, ctx, 1, 0))
		require.NoError(t, tx.Commit())
		// The second: its read's rows are go-sql-driver's own.
		tx, err = conn.BeginTx(ctx, nil)
		require.NoError(t, err)
		rows, err := tx.StmtContext(ctx, sel).QueryContext(ctx, 1)
		require.NoError(t, err)
		assert.True(t, heldRaw(conn), "the short path ran the transaction's read")
		rows.Close()
		require.NoError(t, tx.Commit())

		dies(t, db, conn, func(tx *sql.Tx, ctx context.Context, args ...any) error {
			_, err := tx.StmtContext(ctx, ins).ExecContext(ctx, args...)
			return err
		}, func() {
			require.Eventually(t, func() bool {
				var open bool
				require.NoError(t, conn.Raw(func(dc any) error { open = rwshard.TxOpen(dc); return nil }))
				return !open
			}, 10*time.Second, time.Millisecond, "database/sql never rolled back the transaction whose context ended")
		})
	})
}

// A program moving to rwshard adds its options the way go-sql-driver's
// look, without the prefix: sql.Open itself says which key and how to
// write it, before any connection is made (no server here), and the
// error carries no password.
func TestDropInUnprefixedParamAtOpen(t *testing.T) {
	_, err := sql.Open(rwshard.DriverName, "app:s3cret@tcp(127.0.0.1:1),tcp(127.0.0.1:2)/app?parseTime=true&probeInterval=2s")
	var ce *rwshard.ConfigError
	require.True(t, errors.As(err, &ce), "want *ConfigError from sql.Open, got %v", err)
	assert.Equal(t, "probeInterval", ce.Key)
	assert.Contains(t, err.Error(), "write rwshard.probeInterval")
	assert.NotContains(t, err.Error(), "s3cret")
}
