package shard

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// cfgTwoShards is a valid Config built in code: two data sources, t_order
// sharded on both levels.
func cfgTwoShards() *Config {
	return &Config{
		DataSources: map[string]DataSourceConfig{
			"ds_0": {Primary: "u:p@tcp(h0:3306)/db", Replicas: []string{"u:p@tcp(h0r:3306)/db"}},
			"ds_1": {Primary: "u:p@tcp(h1:3306)/db"},
		},
		Tables: map[string]TableConfig{
			"T_Order": {
				DataNodes:        "ds_${0..1}.t_order_${0..1}",
				DatabaseStrategy: &StrategyConfig{Column: "User_ID", Algorithm: "db_mod"},
				TableStrategy:    &StrategyConfig{Column: "order_id", Algorithm: "t_inline"},
			},
		},
		Algorithms: map[string]AlgorithmConfig{
			"db_mod":   {Type: "MOD", Props: map[string]string{"sharding-count": "2"}},
			"t_inline": {Type: "INLINE", Props: map[string]string{"algorithm-expression": "t_order_${order_id % 2}"}},
		},
	}
}

func TestBuildFromCode(t *testing.T) {
	c := cfgTwoShards()
	r, err := c.Build(nil)
	require.NoError(t, err)

	// Logical names and columns are lower-cased; physical names kept.
	require.Contains(t, r.Tables, "t_order")
	tr := r.Tables["t_order"]
	assert.Equal(t, "t_order", tr.Logical)
	assert.Equal(t, []DataNode{{"ds_0", "t_order_0"}, {"ds_0", "t_order_1"}, {"ds_1", "t_order_0"}, {"ds_1", "t_order_1"}}, tr.DataNodes)
	assert.Equal(t, "user_id", tr.DatabaseStrategy.Column)
	assert.Equal(t, "db_mod", tr.DatabaseStrategy.AlgorithmName)
	assert.Equal(t, "order_id", tr.TableStrategy.Column)

	// The resolved algorithms are the configured ones.
	got, err := tr.DatabaseStrategy.Algorithm.Shard([]string{"ds_0", "ds_1"}, int64(7))
	require.NoError(t, err)
	assert.Equal(t, "ds_1", got)
	got, err = tr.TableStrategy.Algorithm.Shard([]string{"t_order_0", "t_order_1"}, int64(4))
	require.NoError(t, err)
	assert.Equal(t, "t_order_0", got)

	assert.Equal(t, &DataSource{Name: "ds_0", Primary: "u:p@tcp(h0:3306)/db", Replicas: []string{"u:p@tcp(h0r:3306)/db"}}, r.DataSources["ds_0"])

	// Build does not change the Config, and the Rules share no slices
	// with it.
	assert.Equal(t, cfgTwoShards(), c)
	r.DataSources["ds_0"].Replicas[0] = "changed"
	assert.Equal(t, "u:p@tcp(h0r:3306)/db", c.DataSources["ds_0"].Replicas[0])
}

func TestBuildCustomAlgorithm(t *testing.T) {
	byLen := AlgorithmFunc(func(targets []string, v Value) (string, error) {
		return targets[len(fmt.Sprint(v))%len(targets)], nil
	})

	c := cfgTwoShards()
	tc := c.Tables["T_Order"]
	tc.DatabaseStrategy.Algorithm = "by_len"
	c.Tables["T_Order"] = tc
	r, err := c.Build(map[string]Algorithm{"by_len": byLen})
	require.NoError(t, err)
	got, err := r.Tables["t_order"].DatabaseStrategy.Algorithm.Shard([]string{"ds_0", "ds_1"}, "abc")
	require.NoError(t, err)
	assert.Equal(t, "ds_1", got)
	assert.Equal(t, "by_len", r.Tables["t_order"].DatabaseStrategy.AlgorithmName)

	// A CLASS_BASED algorithm is a placeholder for the custom one.
	c.Algorithms["by_len"] = AlgorithmConfig{Type: "CLASS_BASED", Props: map[string]string{"algorithmClassName": "com.example.ByLen"}}
	_, err = c.Build(map[string]Algorithm{"by_len": byLen})
	require.NoError(t, err)
	_, err = c.Build(nil)
	require.ErrorContains(t, err, `algorithms.by_len.type: CLASS_BASED names a Java class; pass a Go Algorithm named "by_len" to Build`)

	// Defined twice.
	c.Algorithms["by_len"] = AlgorithmConfig{Type: "MOD", Props: map[string]string{"sharding-count": "2"}}
	_, err = c.Build(map[string]Algorithm{"by_len": byLen})
	require.ErrorContains(t, err, "algorithms.by_len: defined here and as a custom algorithm")

	_, err = c.Build(map[string]Algorithm{"nil_alg": nil})
	require.ErrorContains(t, err, "custom algorithm nil_alg: nil Algorithm")
}

func TestBuildNoneOverridesDefault(t *testing.T) {
	c := cfgTwoShards()
	c.DefaultTableStrategy = &StrategyConfig{Column: "order_id", Algorithm: "t_inline"}
	c.Tables["t_user"] = TableConfig{
		DataNodes:        "ds_0.t_user, ds_1.t_user",
		DatabaseStrategy: &StrategyConfig{Column: "user_id", Algorithm: "db_mod"},
		TableStrategy:    &StrategyConfig{None: true},
	}
	r, err := c.Build(nil)
	require.NoError(t, err)
	assert.Nil(t, r.Tables["t_user"].TableStrategy)

	// Without none, the default applies: t_user then picks t_order_0 and
	// t_order_1, which it does not have, and Build refuses it.
	tc := c.Tables["t_user"]
	tc.TableStrategy = nil
	c.Tables["t_user"] = tc
	r, chk, err := c.Check(nil)
	require.NoError(t, err)
	assert.Equal(t, "t_inline", r.Tables["t_user"].TableStrategy.AlgorithmName)
	require.Len(t, chk.Problems, 1)
	assert.Equal(t, "defaultTableStrategy.algorithm", chk.Problems[0].Key)
}

// TestBuildErrorsFromCode: errors of a Config built in code name the
// Config's key path, with no file or line.
func TestBuildErrorsFromCode(t *testing.T) {
	c := cfgTwoShards()
	tc := c.Tables["T_Order"]
	tc.TableStrategy.Algorithm = "t_mod"
	c.Tables["T_Order"] = tc
	_, err := c.Build(nil)
	require.EqualError(t, err, `rwshard: config tables.T_Order.tableStrategy.algorithm: "t_mod" is not defined; algorithms: db_mod, t_inline`)
	var ce *rwshard.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "tables.T_Order.tableStrategy.algorithm", ce.Key)
	assert.Zero(t, ce.Line)
	assert.Empty(t, ce.File)
}

// TestBuildPropErrorKeys: an algorithm's property error names the
// property, and wraps the *PropError.
func TestBuildPropErrorKeys(t *testing.T) {
	c := cfgTwoShards()
	c.Algorithms["db_mod"] = AlgorithmConfig{Type: "MOD", Props: map[string]string{"sharding-count": "zero"}}
	_, err := c.Build(nil)
	require.ErrorContains(t, err, `algorithms.db_mod.props.sharding-count: MOD: property sharding-count="zero"`)
	var pe *PropError
	require.True(t, errors.As(err, &pe))
	assert.False(t, strings.Contains(err.Error(), "rwshard: shard: MOD"), "the inner prefix is dropped: %v", err)
}

func TestShapeInline(t *testing.T) {
	assert.Equal(t, "a \x00C % 2 + \x00C", replaceIdent("a order_id % 2 + ORDER_ID", "order_id", "\x00C"))
	assert.Equal(t, "x_order_id", replaceIdent("x_order_id", "order_id", "\x00C"))
	assert.Equal(t, "t_order_", namePrefix([]string{"t_order_10", "t_order_11"}))
	assert.Equal(t, "ds_", namePrefix([]string{"ds_0"}))
	assert.Equal(t, "a.b", parentKeyPath("a.b[2]"))
	assert.Equal(t, "a", parentKeyPath("a.b"))
	assert.Equal(t, "", parentKeyPath("a"))
}
