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
	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/require"
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
