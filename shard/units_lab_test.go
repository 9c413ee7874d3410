package shard_test

import (
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// A sharded statement's units run on the driver's own statement path: a
// prepared single-shard read is prepared where it runs, on the data
// source's replica, and never first on the data source's primary (it
// was: the sharded connection prepared every execution on its held
// primary connection, then read on a replica).
func TestLabShardedPreparedReadOnReplica(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 2*time.Minute)
	rules := labtest.PlainRulesFile(t, l)
	db, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(rules)+"&rwshard.probeInterval=1h&rwshard.consistency=eventual")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount DECIMAL(10,2), status VARCHAR(10), note VARCHAR(20) NULL)")
	require.NoError(t, err)
	for i := range 4 {
		_, err = db.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, status) VALUES (?, ?, 'new')", 100+i, i)
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	counters := func() map[string]int64 {
		out := map[string]int64{}
		for _, n := range l.Nodes() {
			st := labtest.Status(t, n, "Com_stmt_prepare", "Com_stmt_execute")
			out[n.Name+" prepare"], out[n.Name+" execute"] = st["Com_stmt_prepare"], st["Com_stmt_execute"]
		}
		return out
	}
	st, err := db.PrepareContext(ctx, "SELECT status FROM t_order WHERE user_id = ? AND order_id = ?")
	require.NoError(t, err)
	defer st.Close()
	before := counters()
	const reads = 10
	for i := range reads {
		var status string
		require.NoError(t, st.QueryRowContext(ctx, i%4, 100+i%4).Scan(&status))
		assert.Equal(t, "new", status)
	}
	after := counters()
	var replicaExecs int64
	for _, g := range l.Groups {
		p := g.Primary().Name
		assert.Equal(t, before[p+" prepare"], after[p+" prepare"], "%s: nothing prepared on the primary", p)
		assert.Equal(t, before[p+" execute"], after[p+" execute"], "%s: nothing executed on the primary", p)
		for _, r := range g.Replicas() {
			replicaExecs += after[r.Name+" execute"] - before[r.Name+" execute"]
		}
	}
	assert.Equal(t, int64(reads), replicaExecs, "every read executed once, on a replica")
}
