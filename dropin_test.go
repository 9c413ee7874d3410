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
// primary.
func TestLabDropInReadYourWrites(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE ryw (id INT PRIMARY KEY, v INT)")
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
		db, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.probeInterval=200ms"))
		require.NoError(t, err)
		labtest.WaitReady(t, db)
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)
		time.Sleep(time.Second) // the delayed replicas' lag is measured
		stale := 0
		const n = 50
		for i := range n {
			id := len(tc.delayed)*1000 + i
			_, err := db.ExecContext(ctx, "INSERT INTO ryw (id, v) VALUES (?, ?)", id, i)
			require.NoError(t, err)
			var v sql.NullInt64
			require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM ryw WHERE id = ?", id).Scan(&v))
			if !v.Valid || v.Int64 != int64(i) {
				stale++
			}
		}
		st := c.Stats()
		t.Logf("%s: %d of %d reads stale; primary served %d of %d reads; routes %v", tc.name, stale, n, st.PrimaryReads, st.Reads, st.Routes)
		assert.Zero(t, stale, "%s: stale reads", tc.name)
		if len(tc.delayed) == len(l.Replicas()) {
			assert.Equal(t, st.Reads, st.PrimaryReads, "no replica can have the writes in time: the primary")
		} else {
			var waits, timeouts uint64
			var waited time.Duration
			for _, ns := range st.Nodes {
				waits, timeouts, waited = waits+ns.Waits, timeouts+ns.WaitTimeouts, waited+ns.WaitTime
			}
			t.Logf("causal waits %d (%v), timed out %d", waits, waited, timeouts)
			assert.True(t, waits > 0 && waited > 0, "the reads waited on the replica: Stats counts it")
			// The healthy replica waited for each write; a wait that
			// timed out (causalTimeout, on a loaded machine) is the only
			// reason for a read on the primary.
			assert.Equal(t, timeouts, st.PrimaryReads, "the healthy replica waited for each write: %v", fmt.Sprint(st.Routes))
			assert.Less(t, timeouts, uint64(n/2))
		}
		db.Close()
		for _, r := range tc.delayed {
			require.NoError(t, l.Lag(ctx, r, 0))
		}
	}
}
