package shard_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// labPoolRules are poolRules over l (two groups of a primary and two
// replicas), every node as lab.PlainUser, who has GRANT ALL ON app.* and
// nothing more.
func labPoolRules(t *testing.T, l *lab.Lab) *shard.Rules {
	t.Helper()
	dsn := func(n *lab.Node) string { return fmt.Sprintf("%q", labtest.PlainNodeDSN(n)) }
	var sources string
	for _, g := range l.Groups {
		require.Len(t, g.Replicas(), 2, g.Name)
		sources += fmt.Sprintf("  %s: {primary: %s, replicas: [%s, %s]}\n",
			g.Name, dsn(g.Primary()), dsn(g.Replicas()[0]), dsn(g.Replicas()[1]))
	}
	sc, err := shard.ParseYAML([]byte("dataSources:\n" + sources + poolTables))
	require.NoError(t, err)
	rules, err := sc.Build(nil)
	require.NoError(t, err)
	return rules
}

// On real replication, what TestShardedPools shows through Explain: in each
// data source, reads of orders without a hint run on replica1 (off the
// pool), reads hinted to the reporting pool and reads of report_daily (the
// pool rule) on replica2, writes on the primary, however hinted. Where each
// statement ran is what the servers say: @@server_id, read back with the
// rows or written into them.
func TestLabShardedPools(t *testing.T) {
	l := labtest.Fresh(t, lab.Options{Shards: 2, Replicas: 2})
	ctx := labtest.Ctx(t, 3*time.Minute)
	cfg := rwshard.NewConfig()
	cfg.Sharding.Rules = labPoolRules(t, l)
	cfg.ProbeInterval = 250 * time.Millisecond
	cfg.Pools = map[string][]string{"reporting": {"replica2"}}
	cfg.PoolRules = []rwshard.PoolRule{{Pool: "reporting", Tables: []string{"report_*"}}}
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	labtest.WaitReady(t, db)

	// The DDL reaches every data node (through the primaries, then the
	// replicas by replication); each row records the server that wrote it.
	for _, tbl := range []string{"orders", "report_daily"} {
		_, err := db.ExecContext(ctx, "CREATE TABLE "+tbl+" (id BIGINT PRIMARY KEY, n INT NOT NULL, sid INT NOT NULL)")
		require.NoError(t, err, tbl)
	}
	report := hint.Pool(ctx, "reporting")
	ids := []int{1, 2, 3, 4} // even ids in ds_0, odd ones in ds_1
	for _, id := range ids {
		for _, tbl := range []string{"orders", "report_daily"} {
			_, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (id, n, sid) VALUES (?, ?, @@server_id)", id, id*10)
			require.NoError(t, err, "%s %d", tbl, id)
		}
	}
	// Writes hinted to the pool, and writes of the rule's table, stay on
	// the primaries (a replica would refuse them: read_only).
	for _, id := range ids {
		_, err := db.ExecContext(report, "UPDATE orders SET n = n + 1, sid = @@server_id WHERE id = ?", id)
		require.NoError(t, err, "orders %d", id)
		_, err = db.ExecContext(ctx, "UPDATE report_daily SET n = n + 1, sid = @@server_id WHERE id = ?", id)
		require.NoError(t, err, "report_daily %d", id)
	}
	group := func(id int) *lab.Group { return l.Groups[id%2] }
	for _, id := range ids {
		g := group(id)
		for _, tbl := range []string{"orders", "report_daily"} {
			var n, sid int64
			require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx,
				"SELECT n, sid FROM "+tbl+" WHERE id = ?", id).Scan(&n, &sid), "%s %d on %s", tbl, id, g.Name)
			assert.EqualValues(t, id*10+1, n, "%s %d", tbl, id)
			assert.Equal(t, g.Primary().Name, l.NodeByServerID(sid), "%s %d: the server that wrote it", tbl, id)
		}
	}
	// The replicas have every write, and the probes have seen them catch
	// up (a lagging replica2 would not qualify for its pool).
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	time.Sleep(time.Second)

	replica := func(id, r int) string { return group(id).Replicas()[r-1].Name }
	t.Run("one shard", func(t *testing.T) {
		for _, id := range ids {
			for range 3 {
				q := "SELECT @@server_id FROM orders WHERE id = ?"
				assert.Equal(t, replica(id, 1), labtest.RanOn(t, l, db, ctx, q, id), "orders %d, no hint", id)
				assert.Equal(t, replica(id, 2), labtest.RanOn(t, l, db, report, q, id), "orders %d, hinted to the pool", id)
				assert.Equal(t, replica(id, 2), labtest.RanOn(t, l, db, ctx, "/* rwshard:pool=reporting */ "+q, id), "orders %d, comment hint", id)
				q = "SELECT @@server_id FROM report_daily WHERE id = ?"
				assert.Equal(t, replica(id, 2), labtest.RanOn(t, l, db, ctx, q, id), "report_daily %d, the rule", id)
			}
		}
	})

	// scatter reads every row of tbl with the server that returned it.
	scatter := func(ctx context.Context, tbl string) map[int]string {
		t.Helper()
		rows, err := db.QueryContext(ctx, "SELECT id, @@server_id FROM "+tbl+" ORDER BY id")
		require.NoError(t, err, tbl)
		defer rows.Close()
		out := map[int]string{}
		for rows.Next() {
			var id int
			var sid int64
			require.NoError(t, rows.Scan(&id, &sid))
			out[id] = l.NodeByServerID(sid)
		}
		require.NoError(t, rows.Err())
		return out
	}
	t.Run("every shard", func(t *testing.T) {
		on := func(r int) map[int]string {
			m := map[int]string{}
			for _, id := range ids {
				m[id] = replica(id, r)
			}
			return m
		}
		for range 3 {
			assert.Equal(t, on(1), scatter(ctx, "orders"), "orders, no hint")
			assert.Equal(t, on(2), scatter(report, "orders"), "orders, hinted to the pool")
			assert.Equal(t, on(2), scatter(ctx, "report_daily"), "report_daily, the rule")
		}
	})
}
