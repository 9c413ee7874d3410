package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPoolsDSN(t *testing.T) {
	const hosts = "app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306),tcp(10.0.0.4:3306)/shop?"
	cfg, err := rwshard.ParseDSN(hosts + "rwshard.pools=reporting:replica2|replica3,batch:replica1&rwshard.poolFallback=default")
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"reporting": {"replica2", "replica3"}, "batch": {"replica1"}}, cfg.Pools)
	assert.Equal(t, "default", cfg.PoolFallback)
	again, err := rwshard.ParseDSN(cfg.FormatDSN())
	require.NoError(t, err)
	assert.Equal(t, cfg.Pools, again.Pools, "FormatDSN round trip: %s", cfg.FormatDSN())
	assert.Contains(t, cfg.FormatDSN(), "rwshard.pools=batch%3Areplica1%2Creporting%3Areplica2%7Creplica3")

	for _, tc := range []struct{ params, want string }{
		{"rwshard.pools=reporting:replica9", `no node "replica9"`},
		{"rwshard.pools=a:replica1,b:replica1", `node "replica1" is in pools a and b`},
		{"rwshard.pools=default:replica1", "not default, error or primary"},
		{"rwshard.pools=reporting", "want name:node|node"},
		{"rwshard.pools=reporting:replica1&rwshard.poolFallback=elsewhere", "want error, primary, default or a pool name"},
		{"rwshard.pools=r:replica1,r:replica2", `pool "r" named twice`},
	} {
		_, err := rwshard.ParseDSN(hosts + tc.params)
		if assert.Error(t, err, tc.params) {
			assert.Contains(t, err.Error(), tc.want, tc.params)
			assert.NotContains(t, err.Error(), "pw@", "no password in errors")
		}
	}
}

func TestPoolHint(t *testing.T) {
	h, ok, err := hint.Parse(" rwshard:pool=reporting ")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "reporting", h.Pool)
	_, _, err = hint.Parse("rwshard:pool")
	assert.Error(t, err, "a pool hint needs a name")
	ch, _ := hint.FromContext(hint.Pool(context.Background(), "batch"))
	assert.Equal(t, "reporting", hint.Merge(ch, h).Pool, "the comment's pool wins over the context's")
	assert.Equal(t, "batch", hint.Merge(ch, hint.Hint{}).Pool)
}

// Where pooled and unpooled reads may run, without I/O (health off: every
// node up).
func TestPoolsExplain(t *testing.T) {
	db, err := sql.Open(rwshard.DriverName, "app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop?rwshard.health=false&rwshard.pools=reporting:replica2")
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	const q = "SELECT * FROM orders"
	p, err := rwshard.Explain(ctx, db, q)
	require.NoError(t, err)
	assert.Equal(t, []string{"replica1"}, p.Targets, "online reads stay off the reporting replica")
	p, err = rwshard.Explain(hint.Pool(ctx, "reporting"), db, q)
	require.NoError(t, err)
	assert.Equal(t, []string{"replica2"}, p.Targets)
	assert.Equal(t, "reporting", p.Pool)
	assert.Contains(t, p.String(), "pool: reporting")
	p, err = rwshard.Explain(ctx, db, "/* rwshard:pool=reporting */ "+q)
	require.NoError(t, err)
	assert.Equal(t, []string{"replica2"}, p.Targets)
	p, err = rwshard.Explain(hint.Pool(ctx, "reporting"), db, "UPDATE orders SET x = 1")
	require.NoError(t, err)
	assert.Equal(t, []string{"primary"}, p.Targets, "a pool hint never moves a write")
	_, err = rwshard.Explain(hint.Pool(ctx, "nightly"), db, q)
	assert.True(t, errors.Is(err, rwshard.ErrUnknownPool), "%v", err)
	assert.Contains(t, err.Error(), "pools: reporting")
}

// On the lab: pooled reads run on the pool's replica and online reads
// never do; with the pool's replica fenced, a pooled read fails with
// poolFallback=error and runs on the other replica with default.
func TestLabPools(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	// The shared lab's replicas may still be catching up on an earlier
	// test's writes (a lagging replica2 does not qualify for its pool).
	require.NoError(t, l.Sync(ctx, 30*time.Second))
	open := func(fallback string) *sql.DB {
		db, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.pools=reporting:replica2&rwshard.probeInterval=200ms&rwshard.poolFallback="+fallback))
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		labtest.WaitReady(t, db)
		return db
	}
	db := open("error")
	report := hint.Pool(ctx, "reporting")
	for range 6 {
		assert.Equal(t, "replica1", ranOn(t, l, db, ctx, "SELECT @@server_id"))
		assert.Equal(t, "replica2", ranOn(t, l, db, report, "SELECT @@server_id"))
	}
	// A read-only transaction on a replica (readOnlyTx=replica) takes the
	// context's pool.
	ro, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.pools=reporting:replica2&rwshard.readOnlyTx=replica"))
	require.NoError(t, err)
	defer ro.Close()
	labtest.WaitReady(t, ro)
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{{ctx, "replica1"}, {report, "replica2"}} {
		for range 3 {
			tx, err := ro.BeginTx(tc.ctx, &sql.TxOptions{ReadOnly: true})
			require.NoError(t, err)
			assert.Equal(t, tc.want, ranOn(t, l, tx, tc.ctx, "SELECT @@server_id"), "read-only transaction")
			require.NoError(t, tx.Commit())
		}
	}
	fallback := open("default")

	r2 := l.Replicas()[1]
	require.NoError(t, l.StopReplication(ctx, r2))
	defer l.StartReplication(ctx, r2)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	require.True(t, assert.Eventually(t, func() bool {
		for _, n := range c.Stats().Nodes {
			if n.Name == "replica2" {
				return n.Fenced
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond), "replica2 fenced")
	var id int64
	err = db.QueryRowContext(report, "SELECT @@server_id").Scan(&id)
	assert.True(t, errors.Is(err, rwshard.ErrNoReplica) && strings.Contains(err.Error(), "pool reporting"), "%v", err)
	require.True(t, assert.Eventually(t, func() bool {
		return ranOn(t, l, fallback, report, "SELECT @@server_id") == "replica1"
	}, 10*time.Second, 50*time.Millisecond), "poolFallback=default: the online replica")
}

func TestPoolTablesDSN(t *testing.T) {
	const hosts = "app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306),tcp(10.0.0.4:3306)/shop?rwshard.pools=reporting:replica2,batch:replica3&"
	cfg, err := rwshard.ParseDSN(hosts + "rwshard.poolTables=reporting:report_daily|audit.*,batch:export_log")
	require.NoError(t, err)
	assert.Equal(t, []rwshard.PoolRule{
		{Pool: "reporting", Tables: []string{"report_daily", "audit.*"}},
		{Pool: "batch", Tables: []string{"export_log"}},
	}, cfg.PoolRules)
	again, err := rwshard.ParseDSN(cfg.FormatDSN())
	require.NoError(t, err)
	assert.Equal(t, cfg.PoolRules, again.PoolRules, "FormatDSN round trip: %s", cfg.FormatDSN())

	// A rule with a regular expression is Config-only: FormatDSN leaves it out.
	cfg.PoolRules = append(cfg.PoolRules, rwshard.PoolRule{Pool: "batch", Match: "^/\\* export"})
	again, err = rwshard.ParseDSN(cfg.FormatDSN())
	require.NoError(t, err)
	assert.Equal(t, cfg.PoolRules[:2], again.PoolRules)

	for _, tc := range []struct{ params, want string }{
		{"rwshard.poolTables=nightly:t", `rwshard.poolTables="nightly": rule 1: no pool "nightly"; pools: batch, reporting`},
		{"rwshard.poolTables=reporting", `rule "reporting": want pool:table|table`},
		{"rwshard.poolTables=reporting:", `want pool:table|table`},
		{"rwshard.poolTables=reporting:a||b", `rwshard.poolTables="reporting:": rule 1: empty table name`},
		{"rwshard.poolTables=reporting:a,batch:x.y.z", `rwshard.poolTables="batch:x.y.z": rule 2: not a table`},
	} {
		_, err := rwshard.ParseDSN(hosts + tc.params)
		if assert.Error(t, err, tc.params) {
			assert.Contains(t, err.Error(), tc.want, tc.params)
			assert.NotContains(t, err.Error(), "pw@", "no password in errors")
		}
	}
}

// Rules by table from the DSN, in Explain, without I/O: an unqualified
// table is in the DSN's database.
func TestPoolTablesExplain(t *testing.T) {
	db, err := sql.Open(rwshard.DriverName, "app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop?rwshard.health=false"+
		"&rwshard.pools=reporting:replica2&rwshard.poolTables=reporting:shop.report_*")
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	p, err := rwshard.Explain(ctx, db, "SELECT * FROM report_daily")
	require.NoError(t, err)
	assert.Equal(t, []string{"replica2"}, p.Targets)
	assert.Equal(t, "reporting", p.Pool)
	assert.Equal(t, "1: tables shop.report_*", p.PoolRule)
	p, err = rwshard.Explain(ctx, db, "SELECT * FROM archive.report_daily")
	require.NoError(t, err)
	assert.Equal(t, []string{"replica1"}, p.Targets, "another schema's report_daily")
	assert.Empty(t, p.Pool)
	p, err = rwshard.Explain(ctx, db, "UPDATE report_daily SET n = 0")
	require.NoError(t, err)
	assert.Equal(t, []string{"primary"}, p.Targets)
	assert.Empty(t, p.PoolRule)
}

// On the lab: a report matched by a pool rule (by table, or by a
// regular expression) runs only on the pool's replica, online reads never
// do, a write to the report table stays on the primary, and the report
// read right after it (read-your-writes) still keeps off the online
// replica.
func TestLabPoolRules(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS report_daily (day INT PRIMARY KEY, n INT)",
		"CREATE TABLE IF NOT EXISTS orders_online (id INT PRIMARY KEY)",
		"REPLACE INTO report_daily VALUES (1, 1)", "REPLACE INTO orders_online VALUES (1)")
	cfg, err := rwshard.ParseDSN(labDSN(l, "rwshard.pools=reporting:replica2&rwshard.poolTables=reporting:report_*&rwshard.probeInterval=200ms"))
	require.NoError(t, err)
	cfg.PoolRules = append(cfg.PoolRules, rwshard.PoolRule{Pool: "reporting", Match: `^/\* export \*/`})
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	labtest.WaitReady(t, db)

	for range 6 {
		assert.Equal(t, "replica2", ranOn(t, l, db, ctx, "SELECT @@server_id FROM report_daily WHERE day = 1"))
		assert.Equal(t, "replica2", ranOn(t, l, db, ctx, "SELECT @@server_id FROM orders_online o JOIN app.report_daily r ON r.day = o.id"))
		assert.Equal(t, "replica2", ranOn(t, l, db, ctx, "/* export */ SELECT @@server_id FROM orders_online"))
		assert.Equal(t, "replica1", ranOn(t, l, db, ctx, "SELECT @@server_id FROM orders_online WHERE id = 1"))
	}
	var day, id int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT @@server_id, day FROM report_daily WHERE day = 1 FOR UPDATE").Scan(&id, &day))
	assert.Equal(t, "primary", l.NodeByServerID(id), "a locking read stays on the primary")
	res, err := db.ExecContext(ctx, "UPDATE report_daily SET n = n + 1 WHERE day = 1")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	assert.Equal(t, int64(1), n)
	// Right after the write: on the pool's replica once it has the write
	// (the causal wait), or the primary; never the online replica.
	var ran string
	var got int64
	for range 3 {
		var sid int64
		require.NoError(t, db.QueryRowContext(ctx, "SELECT @@server_id, n FROM report_daily WHERE day = 1").Scan(&sid, &got))
		ran = l.NodeByServerID(sid)
		assert.NotEqual(t, "replica1", ran)
	}
	assert.Equal(t, int64(2), got, "the report reads its write (on %s)", ran)

	p, err := c.Explain(ctx, "SELECT * FROM report_daily")
	require.NoError(t, err)
	assert.Equal(t, "reporting", p.Pool)
	assert.Equal(t, "1: tables report_*", p.PoolRule)
}
