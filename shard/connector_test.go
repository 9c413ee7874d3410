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
	cfg.Rules = rules
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	require.Len(t, c.Stats().Nodes, 2)
	require.NoError(t, c.Reload(context.Background(), rules), "reload while open")
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Reload(context.Background(), rules), rwshard.ErrClosed)
	require.ErrorIs(t, c.ReloadFile(context.Background(), "/nonexistent"), rwshard.ErrClosed)
}
