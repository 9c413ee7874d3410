package shard_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/shard"
)

// poolRules are two data sources of a primary and two replicas each
// (none exists: opening does no I/O, and health is off).
func poolRules(t *testing.T, replicas1 string) *shard.Rules {
	t.Helper()
	sc, err := shard.ParseYAML([]byte(`
dataSources:
  ds_0: {primary: "u:p@tcp(127.0.0.1:1)/db_0", replicas: ["u:p@tcp(127.0.0.1:2)/db_0", "u:p@tcp(127.0.0.1:3)/db_0"]}
  ds_1: {primary: "u:p@tcp(127.0.0.1:4)/db_1", replicas: [` + replicas1 + `]}
` + poolTables))
	require.NoError(t, err)
	rules, err := sc.Build(nil)
	require.NoError(t, err)
	return rules
}

// poolTables are the sharded tables of the pool tests: orders and
// report_daily (the pool rule's) on both data sources, by id mod 2.
const poolTables = `tables:
  orders: {dataNodes: "ds_${0..1}.orders", databaseStrategy: {column: id, algorithm: m}}
  report_daily: {dataNodes: "ds_${0..1}.report_daily", databaseStrategy: {column: id, algorithm: m}}
algorithms:
  m: {type: MOD, props: {sharding-count: 2}}
`

func poolConnector(t *testing.T, rules *shard.Rules, pools map[string][]string) (*rwshard.Connector, error) {
	cfg := rwshard.NewConfig()
	cfg.Sharding.Rules = rules
	cfg.Health = false
	cfg.Pools = pools
	cfg.PoolRules = []rwshard.PoolRule{{Pool: "reporting", Tables: []string{"report_*"}}}
	c, err := rwshard.NewConnector(cfg)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// Pools and pool rules apply in every data source, as without sharding:
// the rule's reads on the pool's replica of each shard, online reads on
// the other, a hint beats the rule, writes stay on the primaries.
func TestShardedPools(t *testing.T) {
	const two = `"u:p@tcp(127.0.0.1:5)/db_1", "u:p@tcp(127.0.0.1:6)/db_1"`
	c, err := poolConnector(t, poolRules(t, two), map[string][]string{"reporting": {"replica2"}})
	require.NoError(t, err)
	ctx := context.Background()
	targets := func(ctx context.Context, q string) (map[string][]string, []string) {
		t.Helper()
		p, err := c.Explain(ctx, q)
		require.NoError(t, err, q)
		out, rules := map[string][]string{}, []string(nil)
		for _, u := range p.Units {
			out[u.DataSource] = u.Plan.Targets
			rules = append(rules, u.Plan.Pool+" "+u.Plan.PoolRule)
		}
		return out, rules
	}
	got, rules := targets(ctx, "SELECT * FROM report_daily")
	assert.Equal(t, map[string][]string{"ds_0": {"ds_0-replica2"}, "ds_1": {"ds_1-replica2"}}, got)
	assert.Equal(t, []string{"reporting 1: tables report_*", "reporting 1: tables report_*"}, rules)
	got, _ = targets(ctx, "SELECT * FROM report_daily WHERE id = 3")
	assert.Equal(t, map[string][]string{"ds_1": {"ds_1-replica2"}}, got)
	got, _ = targets(ctx, "SELECT * FROM orders")
	assert.Equal(t, map[string][]string{"ds_0": {"ds_0-replica1"}, "ds_1": {"ds_1-replica1"}}, got, "online reads keep off the pool")
	got, _ = targets(hint.Pool(ctx, "reporting"), "SELECT * FROM orders WHERE id = 2")
	assert.Equal(t, map[string][]string{"ds_0": {"ds_0-replica2"}}, got, "the hint")
	got, _ = targets(ctx, "UPDATE report_daily SET n = 0 WHERE id = 2")
	assert.Equal(t, map[string][]string{"ds_0": {"ds_0-primary"}}, got, "a write")
	p, err := c.Explain(ctx, "SELECT * FROM report_daily")
	require.NoError(t, err)
	assert.Contains(t, p.String(), "on ds_0-replica2 (pool reporting, rule 1: tables report_*)")

	// Full node names name one data source's replica.
	_, err = poolConnector(t, poolRules(t, two), map[string][]string{"reporting": {"ds_0-replica2", "ds_1-replica1"}})
	require.NoError(t, err)
}

func TestShardedPoolsRefused(t *testing.T) {
	// ds_1 has one replica: no replica2 there.
	_, err := poolConnector(t, poolRules(t, `"u:p@tcp(127.0.0.1:5)/db_1"`), map[string][]string{"reporting": {"replica2"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `config dataSources.ds_1: rwshard.pools="reporting:replica2": pool reporting has no node in data source ds_1`)
	_, err = poolConnector(t, poolRules(t, `"u:p@tcp(127.0.0.1:5)/db_1"`), map[string][]string{"reporting": {"ds_0-replica2", "ds_2-replica1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rwshard.pools="reporting:ds_2-replica1": no node "ds_2-replica1" in any data source`)
}
