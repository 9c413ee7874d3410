package shard_test

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// seqOf is the highest sequence number of domain 0 in n's binlog.
func seqOf(t *testing.T, ctx context.Context, n *lab.Node) uint64 {
	t.Helper()
	var pos string
	require.NoError(t, n.Admin().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos))
	for part := range strings.SplitSeq(pos, ",") {
		f := strings.Split(part, "-")
		if len(f) == 3 && f[0] == "0" {
			seq, err := strconv.ParseUint(f[2], 10, 64)
			require.NoError(t, err)
			return seq
		}
	}
	return 0
}

// pump commits single-row transactions on g's primary, directly, until
// its domain 0 is at least min(seq of other)+ahead.
func pump(t *testing.T, ctx context.Context, g, other *lab.Group, table string, ahead uint64) {
	t.Helper()
	db := labtest.Direct(t, g.Primary(), "")
	for id := 100000; seqOf(t, ctx, g.Primary()) < seqOf(t, ctx, other.Primary())+ahead; id++ {
		_, err := db.ExecContext(ctx, "INSERT INTO "+table+" (order_id, user_id) VALUES (?, 9)", id)
		require.NoError(t, err)
	}
}

// nodeStats is the named node's stats.
func nodeStats(t *testing.T, c *rwshard.Connector, name string) rwshard.NodeStats {
	t.Helper()
	for _, ns := range c.Stats().Nodes {
		if ns.Name == name {
			return ns
		}
	}
	t.Fatalf("no node %s", name)
	return rwshard.NodeStats{}
}

// A session's read-your-writes state is per data source: each is its own
// replication cluster, and all of them number their GTIDs in domain 0. A
// write on ds_0 must neither hold back the session's reads of ds_1 (wait
// for a position ds_1 never reaches, then read its primary) nor let them
// pass: ds_0's GTID says nothing about ds_1's replicas.
func TestLabShardedSessionPerDataSource(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 3*time.Minute)
	cfg, err := rwshard.ParseDSN("/app?rwshard.rulesFile=" + url.QueryEscape(labtest.RulesFile(t, l)) +
		"&rwshard.probeInterval=250ms&rwshard.consistency=causal&rwshard.causalTimeout=1s")
	require.NoError(t, err)
	tracer := labtest.NewCancelOn("ds_1-primary")
	cfg.Tracer = tracer
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, c.Ready(ctx))
	_, err = db.ExecContext(ctx, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL)")
	require.NoError(t, err)
	a, b := l.Groups[0], l.Groups[1] // ds_0 (user_id even), ds_1 (odd)
	count := func(ctx context.Context, user, id int) int {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order WHERE user_id = ? AND order_id = ?", user, id).Scan(&n))
		return n
	}

	t.Run("a write on ds_0 does not hold back reads of ds_1", func(t *testing.T) {
		// ds_0's GTIDs run ahead of ds_1's: a wait on ds_1 for one of them
		// could only time out.
		pump(t, ctx, a, b, "t_order_0", 20)
		_, err := db.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id) VALUES (11, 1)")
		require.NoError(t, err)
		require.NoError(t, l.Sync(ctx, 20*time.Second))
		time.Sleep(time.Second) // probes see the replicas caught up

		sctx := rwshard.WithSession(ctx)
		_, err = db.ExecContext(sctx, "INSERT INTO t_order (order_id, user_id) VALUES (20, 0)")
		require.NoError(t, err)
		rep, prim := nodeStats(t, c, "ds_1-replica1"), nodeStats(t, c, "ds_1-primary")
		for range 5 {
			assert.Equal(t, 1, count(sctx, 1, 11))
		}
		assert.Equal(t, 1, count(sctx, 0, 20), "the session reads its write on ds_0")
		rep2, prim2 := nodeStats(t, c, "ds_1-replica1"), nodeStats(t, c, "ds_1-primary")
		assert.Zero(t, rep2.Waits-rep.Waits, "causal waits on ds_1")
		assert.Zero(t, rep2.WaitTimeouts-rep.WaitTimeouts, "causal wait timeouts on ds_1")
		assert.Zero(t, prim2.ReadLatency.Count-prim.ReadLatency.Count, "reads on ds_1's primary")
		assert.Equal(t, uint64(5), rep2.ReadLatency.Count-rep.ReadLatency.Count, "reads on ds_1's replica")
	})

	t.Run("a write on ds_0 does not let a stale read of ds_1 pass", func(t *testing.T) {
		// Now ds_1 runs ahead: its replica's position contains every GTID
		// of ds_0 (same domain, higher sequence numbers).
		pump(t, ctx, b, a, "t_order_0", 20)
		require.NoError(t, l.Sync(ctx, 20*time.Second))
		require.NoError(t, l.Lag(ctx, b.Replicas()[0], 30*time.Second))
		t.Cleanup(func() { _ = l.Lag(context.Background(), b.Replicas()[0], 0) })
		time.Sleep(time.Second) // probes see the replica back, healthy

		// The session writes on ds_1, and its caller's context ends as the
		// write returns: the write committed, its GTID was not read.
		sctx := rwshard.WithSession(ctx)
		wctx, cancel := context.WithCancel(sctx)
		tracer.Arm(cancel)
		_, err := db.ExecContext(wctx, "INSERT INTO t_order (order_id, user_id) VALUES (31, 1)")
		require.NoError(t, err)
		require.True(t, tracer.Fired(), "the context ended as the write returned")
		// Then on ds_0, whose GTID ds_1's delayed replica "has".
		_, err = db.ExecContext(sctx, "INSERT INTO t_order (order_id, user_id) VALUES (32, 0)")
		require.NoError(t, err)
		assert.Equal(t, 1, count(sctx, 1, 31), "stale read: the session does not see its write on ds_1")
		assert.Equal(t, 1, count(sctx, 0, 32), "the session reads its write on ds_0")
	})
}
