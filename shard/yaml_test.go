package shard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// rulesFromYAML parses and builds; the error is from either step.
func rulesFromYAML(src string) (*Rules, error) {
	c, err := ParseYAML([]byte(src))
	if err != nil {
		return nil, err
	}
	return c.Build(nil)
}

func TestNativeFile(t *testing.T) {
	c, err := LoadRules("testdata/rules/native.yaml")
	require.NoError(t, err)
	assert.True(t, c.RouteLog)
	r, err := c.Build(nil)
	require.NoError(t, err)

	assert.Equal(t, map[string]*DataSource{
		"ds_0": {
			Name:    "ds_0",
			Primary: "app:pw@tcp(10.0.0.1:3306)/shop_0?parseTime=true",
			Replicas: []string{
				"app:pw@tcp(10.0.0.2:3306)/shop_0?parseTime=true",
				"app:pw@tcp(10.0.0.3:3306)/shop_0?parseTime=true",
			},
			Balance: "weighted",
			Weights: []float64{2, 1},
		},
		"ds_1": {
			Name:     "ds_1",
			Primary:  "app:pw@tcp(10.0.1.1:3306)/shop_1?parseTime=true",
			Replicas: []string{"app:pw@tcp(10.0.1.2:3306)/shop_1?parseTime=true"},
		},
	}, r.DataSources)
	assert.Equal(t, "ds_0", r.DefaultDataSource)
	assert.Equal(t, [][]string{{"t_order", "t_order_item"}}, r.BindingGroups)
	assert.Equal(t, []string{"t_config", "t_region"}, r.Broadcast)
	assert.Equal(t, 8, r.MaxBroadcastShards)
	assert.False(t, r.RefuseBroadcastReads)

	require.Len(t, r.Tables, 3)
	o := r.Tables["t_order"]
	assert.Equal(t, []DataNode{{"ds_0", "t_order_0"}, {"ds_0", "t_order_1"}, {"ds_1", "t_order_0"}, {"ds_1", "t_order_1"}}, o.DataNodes)
	assert.Equal(t, "user_id", o.DatabaseStrategy.Column)
	assert.Equal(t, "db_mod", o.DatabaseStrategy.AlgorithmName, "the default database strategy")
	assert.Equal(t, "order_id", o.TableStrategy.Column)
	assert.Equal(t, "t_order_inline", o.TableStrategy.AlgorithmName)
	assert.Equal(t, "order_id", o.KeyColumn)
	assert.Equal(t, "snowflake", o.KeyGenerator)
	assertShard(t, o.TableStrategy.Algorithm, []string{"t_order_0", "t_order_1"}, int64(13), "t_order_1")
	assertShard(t, o.DatabaseStrategy.Algorithm, []string{"ds_0", "ds_1"}, int64(13), "ds_1")

	oi := r.Tables["t_order_item"]
	assert.Equal(t, []DataNode{{"ds_0", "t_order_item_0"}, {"ds_0", "t_order_item_1"}, {"ds_1", "t_order_item_0"}, {"ds_1", "t_order_item_1"}}, oi.DataNodes)
	assert.Equal(t, "order_item_id", oi.KeyColumn)

	u := r.Tables["t_user"]
	assert.Equal(t, []DataNode{{"ds_0", "t_user"}, {"ds_1", "t_user"}}, u.DataNodes)
	assert.Nil(t, u.TableStrategy)
	assert.Equal(t, "user_hash", u.DatabaseStrategy.AlgorithmName)
	xx, err := NewAlgorithm("HASH_MOD", map[string]string{"sharding-count": "2"})
	require.NoError(t, err)
	for _, v := range []Value{int64(1), int64(2), "alice", "bob"} {
		want, err := xx.Shard([]string{"ds_0", "ds_1"}, v)
		require.NoError(t, err)
		assertShard(t, u.DatabaseStrategy.Algorithm, []string{"ds_0", "ds_1"}, v, want)
	}

	require.Contains(t, r.KeyGenerators, "snowflake")
	id, err := r.KeyGenerators["snowflake"].NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(1), id>>12&1023, "worker-id 1")
}

func assertShard(t *testing.T, a Algorithm, targets []string, v Value, want string) {
	t.Helper()
	got, err := a.Shard(targets, v)
	require.NoError(t, err)
	assert.Equal(t, want, got, "value %v", v)
}

// nativeBase is the start of the invalid native inputs below.
const nativeBase = `
dataSources:
  ds_0: {primary: "u:p@tcp(h0:3306)/db"}
  ds_1: {primary: "u:p@tcp(h1:3306)/db"}
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${order_id % 2}"}}
  ti_inline: {type: INLINE, props: {algorithm-expression: "t_order_item_${order_id % 2}"}}
  t_mod4: {type: MOD, props: {sharding-count: 4}}
keyGenerators:
  snow: {type: SNOWFLAKE}
`

// TestNativeInvalid: one case per validation rule and per parse error;
// each error names the key path (and, from YAML, the line).
func TestNativeInvalid(t *testing.T) {
	order := `
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_inline}`
	for _, tc := range []struct {
		name string
		src  string
		want string // substring: the key path and the gist
		line int    // 0: not checked
	}{
		// Data sources.
		{"no data sources", `tables: {}`, "dataSources: no data source defined", 0},
		{"no primary", `dataSources: {ds_0: {replicas: ["u@tcp(h)/db"]}}`, "dataSources.ds_0.primary: no primary DSN", 0},
		{"bad DSN", `dataSources: {ds_0: {primary: "u:p@tcp(h0:3306"}}`, "dataSources.ds_0.primary: not a go-sql-driver/mysql DSN", 0},
		{"bad replica DSN", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(h)/db", ""]}}`, "dataSources.ds_0.replicas[1]: empty DSN", 0},
		{"data source name with a dot", `dataSources: {ds.0: {primary: "u@tcp(h)/db"}}`, `dataSources.ds.0: name "ds.0": contains '.'`, 0},
		{"unknown balance", `dataSources: {ds_0: {primary: "u@tcp(h)/db", balance: fastest}}`,
			`dataSources.ds_0.balance: unknown policy "fastest"; valid: round_robin, random, weighted, least_in_flight, latency`, 0},
		{"weighted without weights", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(r)/db"], balance: weighted}}`,
			"dataSources.ds_0.balance: weighted needs weights", 0},
		{"weights count", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(r)/db"], weights: [1, 2]}}`,
			"dataSources.ds_0.weights: 2 weights for 1 replicas", 0},
		{"weights with round robin", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(r)/db"], balance: round_robin, weights: [1]}}`,
			"dataSources.ds_0.weights: weights need balance weighted, not round_robin", 0},
		{"negative weight", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(r)/db", "u@tcp(s)/db"], weights: [1, -1]}}`,
			"dataSources.ds_0.weights[1]: -1: weights must be finite numbers >= 0", 0},
		{"all weights zero", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(r)/db"], weights: [0]}}`,
			"dataSources.ds_0.weights: all weights are 0", 0},
		{"weight not a number", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: ["u@tcp(r)/db"], weights: [heavy]}}`,
			`dataSources.ds_0.weights[0]: "heavy": not a finite number`, 0},
		// Default data source.
		{"default data source", nativeBase + "defaultDataSource: ds_9\n",
			`defaultDataSource: "ds_9" is not defined; dataSources: ds_0, ds_1`, 12},
		// Algorithms and key generators.
		{"algorithm without type", strings.Replace(nativeBase, "db_mod: {type: MOD, props", "db_mod: {props", 1),
			"algorithms.db_mod.type: no algorithm type", 6},
		{"unknown algorithm type", strings.Replace(nativeBase, "type: MOD, props: {sharding-count: 4}", "type: MODULO", 1),
			`algorithms.t_mod4.type: "MODULO": unknown sharding algorithm type`, 9},
		{"unknown algorithm property", strings.Replace(nativeBase, "sharding-count: 4", "sharding-cnt: 4", 1),
			"algorithms.t_mod4.props.sharding-cnt: unknown property of MOD; known: sharding-count, start-offset, stop-offset, zero-padding", 9},
		{"bad algorithm property", strings.Replace(nativeBase, "sharding-count: 4", "sharding-count: -4", 1),
			`algorithms.t_mod4.props.sharding-count: MOD: property sharding-count="-4"`, 9},
		{"missing algorithm property", strings.Replace(nativeBase, "props: {sharding-count: 4}", "props: {}", 1),
			"algorithms.t_mod4.props.sharding-count: MOD: property sharding-count is required", 0},
		{"CLASS_BASED without Go algorithm", strings.Replace(nativeBase, "keyGenerators:", "  cls: {type: CLASS_BASED, props: {algorithmClassName: com.example.Cls}}\nkeyGenerators:", 1),
			`algorithms.cls.type: CLASS_BASED names a Java class; pass a Go Algorithm named "cls" to Build`, 10},
		{"unknown key generator type", strings.Replace(nativeBase, "SNOWFLAKE", "UUID", 1),
			`keyGenerators.snow.type: "UUID": unknown key generator type; want SNOWFLAKE`, 11},
		{"unknown key generator property", strings.Replace(nativeBase, "{type: SNOWFLAKE}", "{type: SNOWFLAKE, props: {workerId: 1}}", 1),
			"keyGenerators.snow.props.workerId: unknown property of SNOWFLAKE", 11},
		// Tables: data nodes.
		{"data node in an undefined data source", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..2}.t_order
    databaseStrategy: {column: user_id, algorithm: db_mod}`,
			`tables.t_order.dataNodes: data node ds_2.t_order: data source "ds_2" is not defined; dataSources: ds_0, ds_1`, 14},
		{"data node without data source", nativeBase + `tables:
  t_order:
    dataNodes: t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: t_inline}`,
			"tables.t_order.dataNodes: data node t_order_0 has no data source", 14},
		{"bad inline expression", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..1.t_order
    databaseStrategy: {column: user_id, algorithm: db_mod}`,
			`tables.t_order.dataNodes: inline expression`, 14},
		{"no data nodes", nativeBase + `tables:
  t_order:
    databaseStrategy: {column: user_id, algorithm: db_mod}`,
			"tables.t_order.dataNodes: no data nodes", 13},
		// Tables: strategies.
		{"algorithm not defined", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}`,
			`tables.t_order.tableStrategy.algorithm: "t_mod" is not defined; algorithms: db_mod, t_inline, t_mod4, ti_inline`, 16},
		{"strategy without column", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: {algorithm: db_mod}`,
			"tables.t_order.databaseStrategy.column: no sharding column", 15},
		{"strategy without algorithm", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: {column: user_id}`,
			"tables.t_order.databaseStrategy.algorithm: no algorithm", 15},
		{"none with a column", nativeBase + `tables:
  t_order:
    dataNodes: ds_0.t_order
    databaseStrategy: {none: true, column: user_id}`,
			"tables.t_order.databaseStrategy.none: none excludes column and algorithm", 15},
		{"default strategy algorithm not defined", nativeBase + `defaultTableStrategy: {column: order_id, algorithm: nope}`,
			`defaultTableStrategy.algorithm: "nope" is not defined`, 12},
		// Tables: ambiguity.
		{"no strategy, several data nodes", nativeBase + `tables:
  t_config:
    dataNodes: ds_0.t_config, ds_1.t_config`,
			"tables.t_config: 2 data nodes and no sharding strategy: a row would have no single home (ambiguous)", 13},
		{"no table strategy, several tables in a data source", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}`,
			"tables.t_order: no table strategy, and data source ds_0 holds 2 of its tables (t_order_0, t_order_1) (ambiguous)", 13},
		{"no database strategy, a table name in two data sources", nativeBase + `tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: t_inline}`,
			"tables.t_order: no database strategy, and table t_order_0 is in data sources ds_0 and ds_1 (ambiguous)", 13},
		{"none overriding the default leaves it ambiguous", nativeBase + `defaultDatabaseStrategy: {column: user_id, algorithm: db_mod}
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: {none: true}`,
			"tables.t_order: 2 data nodes and no sharding strategy", 14},
		// Tables: names and key generators.
		{"logical names differing in case", nativeBase + `tables:
  t_order: {dataNodes: ds_0.t_order}
  T_ORDER: {dataNodes: ds_1.t_order}`,
			"tables.t_order: same table as tables.T_ORDER: logical table names are case-insensitive", 13},
		{"key generator not defined", nativeBase + `tables:
  t_order:
    dataNodes: ds_0.t_order
    keyGenerator: {column: id, generator: uuid}`,
			`tables.t_order.keyGenerator.generator: "uuid" is not defined; keyGenerators: snow`, 15},
		{"key generator without column", nativeBase + `tables:
  t_order:
    dataNodes: ds_0.t_order
    keyGenerator: {generator: snow}`,
			"tables.t_order.keyGenerator.column: no key column", 15},
		// Broadcast tables.
		{"broadcast table also sharded", nativeBase + `tables:
  t_config: {dataNodes: ds_0.t_config}
broadcastTables: [t_dict, T_Config]`,
			"broadcastTables[1]: T_Config is also a sharded table (tables.t_config): a table is either sharded or broadcast", 14},
		{"broadcast table twice", nativeBase + `broadcastTables: [t_dict, t_dict]`,
			"broadcastTables[1]: t_dict is listed twice", 12},
		// Binding tables.
		{"binding table not defined", nativeBase + "tables:" + order + "\nbindingTables: [[t_order, t_order_item]]",
			`bindingTables[0][1]: "t_order_item" is not a sharded table; tables: t_order`, 17},
		{"binding table is broadcast", nativeBase + "tables:" + order + "\nbindingTables: [[t_order, t_dict]]\nbroadcastTables: [t_dict]",
			"bindingTables[0][1]: t_dict is a broadcast table; binding tables must be sharded", 17},
		{"binding group of one", nativeBase + "tables:" + order + "\nbindingTables: [t_order]",
			"bindingTables[0]: a binding group needs at least two tables, got 1", 17},
		{"binding table in two groups", nativeBase + "tables:" + order + `
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: ti_inline}
bindingTables: ["t_order, t_order_item", [t_order_item, t_order]]`,
			"bindingTables[1][0]: t_order_item is already in bindingTables[0]", 21},
		{"binding tables with different node counts", nativeBase + "tables:" + order + `
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..3}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod4}
bindingTables: ["t_order, t_order_item"]`,
			"bindingTables[0][1]: t_order_item has 8 data nodes, t_order has 4: binding tables need the same data node layout", 21},
		{"binding tables in different data sources", nativeBase + "tables:" + order + `
  t_order_item:
    dataNodes: ds_1.t_order_item_${0..1}, ds_0.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: ti_inline}
bindingTables: ["t_order, t_order_item"]`,
			"bindingTables[0][1]: data node 0 of t_order_item is ds_1.t_order_item_0, of t_order is ds_0.t_order_0", 21},
		{"binding tables with different algorithms", nativeBase + "tables:" + order + `
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_inline}
bindingTables: ["t_order, t_order_item"]`,
			`bindingTables[0][1]: table strategy algorithm "t_inline" does not fit t_order_item as it fits t_order (an INLINE expression must name each table's own nodes)`, 21},
		{"binding tables sharded on different levels", nativeBase + "tables:" + order + `
  t_order_item:
    dataNodes: ds_0.t_order_item_${0..1}, ds_1.t_order_item_${2..3}
    tableStrategy: {column: order_id, algorithm: ti_inline}
bindingTables: ["t_order, t_order_item"]`,
			"bindingTables[0][1]: t_order shards on the database level and t_order_item does not", 20},
		// Other keys.
		{"negative broadcast bound", nativeBase + "maxBroadcastShards: -1", "maxBroadcastShards: -1: must be >= 0", 12},
		{"broadcast bound not a number", nativeBase + "maxBroadcastShards: many", `maxBroadcastShards: "many": not an integer`, 12},
		{"bool", nativeBase + "refuseBroadcastReads: yes", `refuseBroadcastReads: "yes": want true or false`, 12},
		// Parse errors.
		{"unknown top-level key", nativeBase + "tabels: {}", "tabels: unknown key; valid keys here: dataSources, defaultDataSource, tables", 12},
		{"unknown table key", nativeBase + "tables: {t_order: {dataNode: ds_0.t_order}}", "tables.t_order.dataNode: unknown key; valid keys here: dataNodes, databaseStrategy, tableStrategy, keyGenerator", 12},
		{"unknown strategy key", nativeBase + "tables: {t_order: {dataNodes: ds_0.t, tableStrategy: {col: x}}}", "tables.t_order.tableStrategy.col: unknown key; valid keys here: column, algorithm, none", 12},
		{"repeated key", nativeBase + "tables:\n  t_order: {dataNodes: ds_0.t}\n  t_order: {dataNodes: ds_1.t}", "tables.t_order: key repeated (first at line 13)", 14},
		{"wrong kind", nativeBase + "tables: [t_order]", "tables: expected a mapping, found a list", 12},
		{"list expected", `dataSources: {ds_0: {primary: "u@tcp(h)/db", replicas: "u@tcp(r)/db"}}`, "dataSources.ds_0.replicas: expected a list, found a scalar", 1},
		{"single value expected", `dataSources: {ds_0: {primary: [a, b]}}`, "dataSources.ds_0.primary: expected a single value, found a list", 1},
		{"tag in the native dialect", nativeBase + "tables: !SHARDING {}", "tables: unexpected tag !SHARDING", 12},
		{"YAML syntax", "dataSources:\n  ds_0: [\n", "line 2: yaml: did not find expected node content", 2},
		{"two documents", nativeBase + "---\ntables: {}\n", "a second YAML document", 12},
		{"empty", "", "empty rules file", 0},
		{"not a mapping", "- a\n- b\n", "the top level must be a mapping, found a list", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rulesFromYAML(tc.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "rwshard: config"), err.Error())
			var ce *rwshard.ConfigError
			require.True(t, errors.As(err, &ce), "%T", err)
			if tc.line > 0 {
				assert.Equal(t, tc.line, ce.Line, "line of %v", err)
			}
		})
	}
}

func TestNativeCommaBindingAndAliases(t *testing.T) {
	src := `
x-ds: &ds {primary: "u@tcp(h)/db"}
`
	_, err := ParseYAML([]byte(src))
	require.ErrorContains(t, err, "x-ds: unknown key")

	// Anchors, aliases and merge keys work; own keys win over merged ones.
	src = `
dataSources:
  ds_0: &ds {primary: "u@tcp(h0)/db", balance: random}
  ds_1: {<<: *ds, primary: "u@tcp(h1)/db"}
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: &s {column: user_id, algorithm: db_mod}
  t_item:
    dataNodes: ds_${0..1}.t_item
    databaseStrategy: *s
bindingTables: ["t_order , t_item"]
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
`
	r, err := rulesFromYAML(src)
	require.NoError(t, err)
	assert.Equal(t, "u@tcp(h1)/db", r.DataSources["ds_1"].Primary)
	assert.Equal(t, "random", r.DataSources["ds_1"].Balance)
	assert.Equal(t, [][]string{{"t_order", "t_item"}}, r.BindingGroups)
}

func TestYAMLAliasBomb(t *testing.T) {
	// 520 aliases of a list of 520 names: 4 KB of YAML, 270,000 nodes
	// to walk. The walk stops at its budget.
	src := "bindingTables:\n  - &a [" + strings.Repeat("t, ", 519) + "t]\n" + strings.Repeat("  - *a\n", 519)
	_, err := ParseYAML([]byte(src))
	require.ErrorContains(t, err, "too many YAML nodes")
}

func TestLoadRulesErrorNamesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(nativeBase+`tables:
  t_order:
    dataNodes: ds_0.t_order
    tableStrategy: {column: order_id, algorithm: t_mod}
`), 0o644))
	c, err := LoadRules(path)
	require.NoError(t, err)
	_, err = c.Build(nil)
	require.EqualError(t, err, "rwshard: config "+path+
		`:15: tables.t_order.tableStrategy.algorithm: "t_mod" is not defined; algorithms: db_mod, t_inline, t_mod4, ti_inline`)

	_, err = LoadRules(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}
