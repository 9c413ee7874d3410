package rwshard_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/balance"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NewConnector does no network I/O: with a replica that accepts TCP and
// never answers, it returns while that replica's first probe still hangs.
// The first read waits for the first round of probes, at most
// connectTimeout, and then goes to the primary. The silent replica's probe
// gives up at connectTimeout too, within a millisecond or two of the
// read's wait: the read is counted as "starting" (no replica probed yet)
// or "no-healthy-replica" (probed and down), whichever came first.
func TestLabConnectorNoIO(t *testing.T) {
	l := rwLab.Get(t)
	bh, err := lab.NewBlackhole()
	require.NoError(t, err)
	defer bh.Close()
	cfg, err := rwshard.ParseDSN(labDSN(l, "rwshard.probeTimeout=10s&rwshard.connectTimeout=1s"))
	require.NoError(t, err)
	cfg.Nodes = append(cfg.Nodes[:1], rwshard.Node{Name: "silent", Net: "tcp", Addr: bh.Addr()})
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	defer c.Close()

	done, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, c.Ready(done), context.Canceled, "NewConnector returned before the silent node's first probe ended")

	var one int
	db := sql.OpenDB(c)
	start := time.Now()
	require.NoError(t, db.QueryRow("SELECT 1").Scan(&one))
	took := time.Since(start)
	assert.True(t, took >= 900*time.Millisecond && took < 5*time.Second, "the read waited connectTimeout for the probes, not the probe timeout: %v", took)
	routes := c.Stats().Routes
	assert.Equal(t, uint64(1), routes["starting"]+routes["no-healthy-replica"], "%v", routes)
	assert.Equal(t, 1, len(routes), "%v", routes)
}

// Without the sharding module linked in, a sharded configuration is an
// error that says what to import; nothing else is opened.
func TestShardingNeedsModule(t *testing.T) {
	_, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile=%2Fetc%2Frules.yaml")
	assert.ErrorContains(t, err, `import _ "github.com/rwshard/rwshard/shard"`)
	cfg := rwshard.NewConfig()
	cfg.Sharding.RulesFile = "/etc/rules.yaml"
	_, err = rwshard.NewConnector(cfg)
	var ce *rwshard.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "rwshard.rulesFile", ce.Key)
	assert.Contains(t, err.Error(), `import _ "github.com/rwshard/rwshard/shard"`)
}

// A Config written as a literal gets NewConfig's defaults for the fields
// it leaves zero (a zero MaxIdleConns would mean a dial per statement).
func TestConfigLiteralDefaults(t *testing.T) {
	c, err := rwshard.NewConnector(&rwshard.Config{Nodes: []rwshard.Node{{Addr: "127.0.0.1:1"}}, Health: false})
	require.NoError(t, err)
	defer c.Close()
	def := rwshard.NewConfig()
	got := c.Config()
	assert.Equal(t, def.MaxIdleConns, got.MaxIdleConns)
	assert.Equal(t, def.StmtCacheSize, got.StmtCacheSize)
	assert.Equal(t, def.WritePause, got.WritePause)
	assert.Equal(t, def.MaxReplicaLag, got.MaxReplicaLag)
	assert.Equal(t, def.Consistency, got.Consistency)
	assert.True(t, got.Health, "a literal's zero Health is the default, true")
}

// Errors wrap their cause with %w: errors.Is and errors.As reach the
// sub-packages' errors through NewConnector and statements, and the
// message carries one "rwshard:" prefix.
func TestErrorsReachCause(t *testing.T) {
	_, err := sql.Open(rwshard.DriverName, "tcp(127.0.0.1:1),tcp(127.0.0.1:2)/db?rwshard.balance=leastconn")
	assert.ErrorIs(t, err, balance.ErrUnknownPolicy)
	assert.Equal(t, 1, strings.Count(err.Error(), "rwshard:"), err.Error())

	cfg, err := rwshard.ParseDSN("tcp(127.0.0.1:1),tcp(127.0.0.1:2)/db")
	require.NoError(t, err)
	cfg.Balance, cfg.Weights = "weighted", map[string]float64{"replica1": 0}
	_, err = rwshard.NewConnector(cfg)
	var we *balance.WeightError
	assert.ErrorAs(t, err, &we, "%v", err)
	assert.Equal(t, 1, strings.Count(err.Error(), "rwshard:"), err.Error())

	db, err := rwshard.OpenDB(mustDB(t), nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("/* rwshard:primry */ SELECT 1")
	var he *hint.Error
	assert.ErrorAs(t, err, &he)
	var re *rwshard.RouteError
	assert.ErrorAs(t, err, &re)
	assert.Equal(t, 1, strings.Count(err.Error(), "rwshard: "), err.Error())
}

// mustDB is a *sql.DB that is never dialled.
func mustDB(t *testing.T) *sql.DB {
	db, err := sql.Open("mysql", "u:p@tcp(127.0.0.1:1)/db")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// With the primary's pool bounded (rwshard.maxOpenConns=1), a transaction
// hands its primary connection back when it ends: a *sql.Conn that the
// application keeps idle after a transaction does not hold the only
// connection while another one waits for it.
func TestLabBoundedPoolTransactionsShareTheConnection(t *testing.T) {
	l := rwLab.Get(t)
	ctx := context.Background()
	setup(t, l, "CREATE TABLE IF NOT EXISTS bounded (id INT PRIMARY KEY)", "TRUNCATE bounded")
	db, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, "rwshard.maxOpenConns=1"))
	require.NoError(t, err)
	defer db.Close()
	for i := range 3 {
		kept, err := db.Conn(ctx) // each stays open, idle, until the test ends
		require.NoError(t, err)
		defer kept.Close()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		tx, err := kept.BeginTx(wctx, nil)
		require.NoError(t, err, "transaction %d waited for a connection an idle *sql.Conn holds", i)
		_, err = tx.ExecContext(wctx, "INSERT INTO bounded VALUES (?)", i)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		cancel()
	}
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	for _, n := range c.Stats().Nodes {
		if n.Primary {
			assert.Equal(t, 1, n.Pool.MaxOpenConnections)
			assert.Zero(t, n.Pool.InUse, "the primary connection is back in its pool")
		}
	}
}
