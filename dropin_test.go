package rwshard_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/require"
)

// Code that never heard of rwshard reads its own writes: no session in
// the context, default settings, replicas delayed by MASTER_DELAY=2. Each
// write is read back at once through the same *sql.DB; none is stale.
// With every replica delayed the reads go to the primary; with one
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
		for _, style := range styles {
			db, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, "rwshard.probeInterval=200ms"))
			require.NoError(t, err)
			labtest.WaitReady(t, db)
			c, err := rwshard.ConnectorOf(ctx, db)
			require.NoError(t, err)
			held, err := db.Conn(ctx)
			require.NoError(t, err)
			time.Sleep(time.Second) // the delayed replicas' lag is measured
			stale := 0
			const n = 30
			for i := range n {
				id++
				require.NoError(t, style.write(db, held, id, i))
				var v sql.NullInt64
				require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM ryw WHERE id = ?", id).Scan(&v))
				if !v.Valid || v.Int64 != int64(i) {
					stale++
				}
			}
			st := c.Stats()
			what := tc.name + ", " + style.name
			t.Logf("%s: %d of %d reads stale; primary served %d of %d reads; routes %v", what, stale, n, st.PrimaryReads, st.Reads, st.Routes)
			assert.Zero(t, stale, "%s: stale reads", what)
			if len(tc.delayed) == len(l.Replicas()) {
				assert.Equal(t, st.Reads, st.PrimaryReads, "%s: no replica can have the writes in time: the primary", what)
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

// Transactions that no read follows cost no extra statement in causal
// mode: the commits' GTIDs stay on the primary connection that committed
// them until a read needs one, or until that connection goes back to its
// pool (TPC-C's shape: its reads run inside transactions). Probes are off
// the clock (one at start), so the primary's Com_select counts rwshard's
// statements only.
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
	// The read paid the one GTID owed (the newest commit's) and ran on a
	// replica.
	assert.Equal(t, during+1, statusCounter(t, l.Primary(), "Com_select"), "SELECTs on the primary for the read")
}
