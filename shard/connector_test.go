package shard_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/shard"
)

// Opening a sharded connector does no I/O (its data sources here do not
// exist); Reload after Close is refused.
func TestReloadAfterClose(t *testing.T) {
	sc, err := shard.ParseYAML([]byte(`
dataSources:
  ds_0: {primary: "u:p@tcp(127.0.0.1:1)/db_0"}
  ds_1: {primary: "u:p@tcp(127.0.0.1:1)/db_1"}
tables:
  t: {dataNodes: "ds_${0..1}.t", databaseStrategy: {column: id, algorithm: m}}
algorithms:
  m: {type: MOD, props: {sharding-count: 2}}
`))
	require.NoError(t, err)
	rules, err := sc.Build(nil)
	require.NoError(t, err)
	cfg := rwshard.NewConfig()
	cfg.Sharding.Rules = rules
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	require.Len(t, c.Stats().Nodes, 2)
	require.NoError(t, c.Reload(context.Background(), rules), "reload while open")
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Reload(context.Background(), rules), rwshard.ErrClosed)
	require.ErrorIs(t, c.ReloadFile(context.Background(), "/nonexistent"), rwshard.ErrClosed)
}

// Rules assembled in Go, not through Config.Build, get the same proof:
// MOD over four tables where the data nodes have two fails for half of
// the keys, so neither NewConnector nor Reload accepts it.
func TestRulesBuiltInCodeAreProved(t *testing.T) {
	mod, err := shard.NewAlgorithm("MOD", map[string]string{"sharding-count": "4"})
	require.NoError(t, err)
	bad := &shard.Rules{
		DataSources: map[string]*shard.DataSource{"ds_0": {Name: "ds_0", Primary: "u:p@tcp(127.0.0.1:1)/db_0"}},
		Tables: map[string]*shard.TableRule{"t_order": {Logical: "t_order",
			DataNodes:     []shard.DataNode{{DataSource: "ds_0", Table: "t_order_0"}, {DataSource: "ds_0", Table: "t_order_1"}},
			TableStrategy: &shard.Strategy{Column: "order_id", Algorithm: mod, AlgorithmName: "t_mod"}}},
	}
	cfg := rwshard.NewConfig()
	cfg.Sharding.Rules = bad
	_, err = rwshard.NewConnector(cfg)
	require.ErrorIs(t, err, shard.ErrNoTarget)
	require.ErrorContains(t, err, "t_order")
	require.ErrorContains(t, err, "t_mod")

	good := *bad
	good.Tables = map[string]*shard.TableRule{"t_order": {Logical: "t_order", DataNodes: bad.Tables["t_order"].DataNodes}}
	cfg.Sharding.Rules = &good
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	defer c.Close()
	require.ErrorIs(t, c.Reload(context.Background(), bad), shard.ErrNoTarget, "reload is proved too")
}
