package shard

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

func TestShardingSphere52File(t *testing.T) {
	c, err := LoadRules("testdata/rules/shardingsphere-5.2.yaml")
	require.NoError(t, err)
	assert.True(t, c.RouteLog, "sql-show: true")
	// HASH_MOD in ShardingSphere is Java hashCode: SS_HASH_MOD here.
	assert.Equal(t, "SS_HASH_MOD", c.Algorithms["user_hash"].Type)
	r, err := c.Build(nil)
	require.NoError(t, err)

	// Each read/write splitting group is one data source; the members are
	// gone.
	assert.Equal(t, map[string]*DataSource{
		"readwrite_ds_0": {
			Name:     "readwrite_ds_0",
			Primary:  "root:secret@tcp(10.0.0.1:3306)/demo_ds_0?charset=utf8mb4&tls=false",
			Replicas: []string{"root:secret@tcp(10.0.0.2:3306)/demo_ds_0?charset=utf8mb4&tls=false"},
			Balance:  "round_robin",
		},
		"readwrite_ds_1": {
			Name:     "readwrite_ds_1",
			Primary:  "root:secret@tcp(10.0.1.1:3306)/demo_ds_1?loc=Asia%2FShanghai&tls=false",
			Replicas: []string{"reader:p@ss:w/rd@tcp(10.0.1.2:3306)/demo_ds_1?loc=Etc%2FGMT-8&readTimeout=30s&timeout=2s"},
			Balance:  "random",
		},
	}, r.DataSources)
	assert.Empty(t, r.DefaultDataSource)
	assert.Equal(t, [][]string{{"t_order", "t_order_item"}}, r.BindingGroups)
	assert.Equal(t, []string{"t_address"}, r.Broadcast)

	o := r.Tables["t_order"]
	assert.Equal(t, []DataNode{
		{"readwrite_ds_0", "t_order_0"}, {"readwrite_ds_0", "t_order_1"},
		{"readwrite_ds_1", "t_order_0"}, {"readwrite_ds_1", "t_order_1"},
	}, o.DataNodes)
	assert.Equal(t, "database_inline", o.DatabaseStrategy.AlgorithmName)
	assert.Equal(t, "user_id", o.DatabaseStrategy.Column)
	assert.Equal(t, "t_order_inline", o.TableStrategy.AlgorithmName)
	assert.Equal(t, "order_id", o.KeyColumn)
	assert.Equal(t, "snowflake", o.KeyGenerator)
	assertShard(t, o.DatabaseStrategy.Algorithm, []string{"readwrite_ds_0", "readwrite_ds_1"}, int64(3), "readwrite_ds_1")

	// No actualDataNodes: the table in every data source (groups first,
	// in file order); the default table strategy is none.
	u := r.Tables["t_user"]
	assert.Equal(t, []DataNode{{"readwrite_ds_0", "t_user"}, {"readwrite_ds_1", "t_user"}}, u.DataNodes)
	assert.Nil(t, u.TableStrategy)
	ss, err := NewAlgorithm("SS_HASH_MOD", map[string]string{"sharding-count": "2"})
	require.NoError(t, err)
	for _, v := range []Value{int64(1), int64(-7), int64(1) << 40} {
		want, err := ss.Shard([]string{"readwrite_ds_0", "readwrite_ds_1"}, v)
		require.NoError(t, err)
		assertShard(t, u.DatabaseStrategy.Algorithm, []string{"readwrite_ds_0", "readwrite_ds_1"}, v, want)
	}
}

func TestShardingSphere54File(t *testing.T) {
	c, err := LoadRules("testdata/rules/shardingsphere-5.4.yaml")
	require.NoError(t, err)
	assert.False(t, c.RouteLog)
	r, err := c.Build(nil)
	require.NoError(t, err)

	assert.Equal(t, map[string]*DataSource{
		"rw_ds_0": {
			Name:    "rw_ds_0",
			Primary: "app:pw0@tcp(db0.internal:3307)/shop?timeout=2s&tls=true",
			Replicas: []string{
				"app:pw0@tcp(db0a.internal:3307)/shop?tls=skip-verify",
				"app:pw0@tcp(db0b.internal:3307)/shop?tls=false",
			},
			Balance: "weighted",
			Weights: []float64{3, 1},
		},
		"rw_ds_1": {
			Name:     "rw_ds_1",
			Primary:  "app:pw1@tcp([fd00::11]:3306)/shop?multiStatements=true&tls=skip-verify",
			Replicas: []string{"app:pw1@tcp([fd00::12]:3306)/shop?tls=true"},
			Balance:  "round_robin",
		},
	}, r.DataSources)
	assert.Equal(t, "rw_ds_0", r.DefaultDataSource, "!SINGLE defaultDataSource")
	assert.Equal(t, []string{"t_dict", "t_region"}, r.Broadcast, "!BROADCAST")
	assert.Equal(t, [][]string{{"t_order", "t_order_item"}}, r.BindingGroups, `"orders:" names the group`)

	for _, name := range []string{"t_order", "t_order_item"} {
		tr := r.Tables[name]
		require.Len(t, tr.DataNodes, 8, name)
		assert.Equal(t, DataNode{"rw_ds_0", name + "_0"}, tr.DataNodes[0])
		assert.Equal(t, DataNode{"rw_ds_1", name + "_3"}, tr.DataNodes[7])
		assert.Equal(t, "user_id", tr.DatabaseStrategy.Column, "defaultShardingColumn")
		assert.Equal(t, "db_hash", tr.DatabaseStrategy.AlgorithmName)
		assert.Equal(t, "order_id", tr.TableStrategy.Column)
		assertShard(t, tr.TableStrategy.Algorithm, []string{name + "_0", name + "_1", name + "_2", name + "_3"}, int64(10), name+"_2")
	}
	assert.Equal(t, "order_id", r.Tables["t_order"].KeyColumn)
	assert.Equal(t, "id", r.Tables["t_order_item"].KeyColumn, "defaultKeyGenerateStrategy")
	assert.Equal(t, "snowflake", r.Tables["t_order_item"].KeyGenerator)
	id, err := r.KeyGenerators["snowflake"].NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(7), id>>12&1023, "worker-id 7")
}

// ssBase is a minimal ShardingSphere file the cases below extend.
const ssBase = `dataSources:
  ds_0:
    jdbcUrl: jdbc:mysql://h0:3306/db
    username: u
  ds_1:
    jdbcUrl: jdbc:mysql://h1:3306/db
    username: u
rules:
`

func TestShardingSphereShapes(t *testing.T) {
	// 5.1: type Static with props; 5.0: flat names under dataSources.
	for _, rw := range []string{`
- !READWRITE_SPLITTING
  dataSources:
    pr_ds:
      type: Static
      props:
        write-data-source-name: ds_0
        read-data-source-names: ds_1
`, `
- !READWRITE_SPLITTING
  dataSources:
    pr_ds:
      writeDataSourceName: ds_0
      readDataSourceNames: [ds_1]
      loadBalancerName: lb
  loadBalancers:
    lb: {type: ROUND_ROBIN}
`} {
		r, err := rulesFromYAML(ssBase + rw)
		require.NoError(t, err)
		assert.Equal(t, map[string]*DataSource{"pr_ds": {
			Name: "pr_ds", Primary: "u@tcp(h0:3306)/db", Replicas: []string{"u@tcp(h1:3306)/db"}, Balance: "round_robin",
		}}, r.DataSources)
	}

	// Without read/write splitting each data source stands alone; the
	// accepted no-op keys are accepted.
	r, err := rulesFromYAML(`
schemaName: logic_db
mode:
  type: Standalone
  repository: {type: JDBC, props: {path: demo}}
  overwrite: false
dataSources:
  ds_0:
    type: com.zaxxer.hikari.HikariDataSource
    driverClassName: com.mysql.cj.jdbc.Driver
    url: jdbc:mysql://h0/db
    username: u
    password:
    poolName: p0
    minimumIdle: 1
    maxLifetime: 1800000
    idleTimeout: 60000
    connectionTimeout: 30000
rules:
- !SHARDING
  tables:
    t_order:
      actualDataNodes: ds_0.t_order_${0..1}
      databaseStrategy: {none: }
      tableStrategy: {standard: {shardingColumn: order_id, shardingAlgorithmName: m}}
  shardingAlgorithms:
    m: {type: MOD, props: {sharding-count: 2}}
- !TRANSACTION
  defaultType: LOCAL
  providerType: Atomikos
props:
  max-connections-size-per-query: 1
  sql-federation-enabled: false
  sql-federation-type: NONE
  sql-simple: true
`)
	require.NoError(t, err)
	assert.Equal(t, "u@tcp(h0:3306)/db", r.DataSources["ds_0"].Primary)
	assert.Empty(t, r.DataSources["ds_0"].Balance)
	assert.Nil(t, r.Tables["t_order"].DatabaseStrategy)
}

// TestShardingSphereInvalid: every refused ShardingSphere feature and
// every Build error names the key as the file wrote it, with its line.
func TestShardingSphereInvalid(t *testing.T) {
	sharding := `- !SHARDING
  tables:
    t_order:
      actualDataNodes: ds_${0..1}.t_order
      databaseStrategy:
        standard:
          shardingColumn: user_id
          shardingAlgorithmName: db_mod
  shardingAlgorithms:
    db_mod:
      type: MOD
      props:
        sharding-count: 2
`
	for _, tc := range []struct {
		name string
		src  string
		want string
		line int
	}{
		// Top level.
		{"unknown top-level key", ssBase + "schema: x\n", "schema: unknown key; valid keys here: dataSources, rules, props, mode, databaseName, schemaName", 9},
		{"cluster mode", "mode: {type: Cluster, repository: {type: ZooKeeper}}\n" + ssBase,
			"mode.type: Cluster mode (rules kept in a registry center) is not supported", 1},
		{"unsupported prop", ssBase + "props: {check-duplicate-table-enabled: true}\n",
			"props.check-duplicate-table-enabled: property not supported by rwshard; supported: sql-show,", 9},
		{"sql federation", ssBase + "props: {sql-federation-enabled: true}\n",
			"props.sql-federation-enabled: SQL federation (cross-shard joins computed in the client) is not supported", 9},
		{"bad sql-show", ssBase + "props: {sql-show: maybe}\n", `props.sql-show: "maybe": want true or false`, 9},
		{"no data sources", "rules: []\n", "dataSources: no data source defined", 1},
		// Rules.
		{"unsupported rule", ssBase + "- !ENCRYPT\n  tables: {}\n",
			"rules.!ENCRYPT: rule !ENCRYPT is not supported by rwshard; supported: !SHARDING, !READWRITE_SPLITTING, !BROADCAST, !SINGLE, !TRANSACTION (LOCAL)", 9},
		{"shadow rule", ssBase + "- !SHADOW\n  dataSources: {}\n", "rules.!SHADOW: rule !SHADOW is not supported", 9},
		{"mask rule", ssBase + "- !MASK\n  tables: {}\n", "rules.!MASK: rule !MASK is not supported", 9},
		{"untagged rule", ssBase + "- tables: {}\n", "rules[0]: a rule needs a tag", 9},
		{"rule twice", ssBase + "- !BROADCAST {tables: [a]}\n- !BROADCAST {tables: [b]}\n", "rules[1]: rule !BROADCAST given twice (first at line 9)", 10},
		{"XA transactions", ssBase + "- !TRANSACTION\n  defaultType: XA\n", `rules.!TRANSACTION.defaultType: "XA": only LOCAL transactions are supported`, 10},
		// !SHARDING.
		{"complex strategy", ssBase + strings.Replace(sharding, "standard:", "complex:", 1),
			"rules.!SHARDING.tables.t_order.databaseStrategy.complex: complex strategies (several sharding columns) are not supported", 14},
		{"hint strategy", ssBase + strings.Replace(sharding, "standard:", "hint:", 1),
			"rules.!SHARDING.tables.t_order.databaseStrategy.hint: hint strategies are not supported", 14},
		{"two strategies", ssBase + strings.Replace(sharding, "databaseStrategy:\n", "databaseStrategy:\n        none:\n", 1),
			"rules.!SHARDING.tables.t_order.databaseStrategy: want exactly one of standard or none, found 2 keys", 13},
		{"unknown standard key", ssBase + strings.Replace(sharding, "shardingColumn:", "shardingColumns:", 1),
			"rules.!SHARDING.tables.t_order.databaseStrategy.standard.shardingColumns: unknown key; valid keys here: shardingColumn, shardingAlgorithmName", 15},
		{"auto tables", ssBase + sharding + "  autoTables: {}\n",
			"rules.!SHARDING.autoTables: auto tables are not supported", 22},
		{"audit strategy", ssBase + strings.Replace(sharding, "      databaseStrategy:", "      auditStrategy: {auditorNames: [a]}\n      databaseStrategy:", 1),
			"rules.!SHARDING.tables.t_order.auditStrategy: sharding audits are not supported", 13},
		{"unknown sharding key", ssBase + sharding + "  defaultDataSourceName: ds_0\n",
			"rules.!SHARDING.defaultDataSourceName: unknown key", 22},
		// Build errors, named as the file wrote them.
		{"algorithm not defined", ssBase + strings.Replace(sharding, "shardingAlgorithmName: db_mod", "shardingAlgorithmName: db_hash", 1),
			`rules.!SHARDING.tables.t_order.databaseStrategy.standard.shardingAlgorithmName: "db_hash" is not defined; algorithms: db_mod`, 16},
		{"no sharding column", ssBase + strings.Replace(sharding, "          shardingColumn: user_id\n", "", 1),
			"rules.!SHARDING.tables.t_order.databaseStrategy.standard.shardingColumn: no sharding column", 14},
		{"broadcast table also sharded", ssBase + strings.Replace(sharding, "ds_${0..1}.t_order", "rw_${0..1}.t_order", 1) + `- !READWRITE_SPLITTING
  dataSourceGroups:
    rw_0: {writeDataSourceName: ds_0}
    rw_1: {writeDataSourceName: ds_1}
- !BROADCAST
  tables: [t_order]
`, "rules.!BROADCAST.tables[0]: t_order is also a sharded table (tables.t_order): a table is either sharded or broadcast", 27},
		{"data node names a raw data source of a group", ssBase + sharding + `- !READWRITE_SPLITTING
  dataSourceGroups:
    rw_0: {writeDataSourceName: ds_0, readDataSourceNames: [ds_1]}
`, `rules.!SHARDING.tables.t_order.actualDataNodes: data node ds_0.t_order: data source "ds_0" is not defined; dataSources: rw_0`, 12},
		{"unknown algorithm property", ssBase + strings.Replace(sharding, "sharding-count: 2", "sharding-count: 2\n        sharding-offset: 1", 1),
			"rules.!SHARDING.shardingAlgorithms.db_mod.props.sharding-offset: unknown property of MOD", 22},
		{"unknown algorithm type", ssBase + strings.Replace(sharding, "type: MOD", "type: COSID_MOD", 1),
			`rules.!SHARDING.shardingAlgorithms.db_mod.type: "COSID_MOD": unknown sharding algorithm type`, 19},
		{"key generator not defined", ssBase + strings.Replace(sharding, "      databaseStrategy:", "      keyGenerateStrategy: {column: id, keyGeneratorName: snowflake}\n      databaseStrategy:", 1),
			`rules.!SHARDING.tables.t_order.keyGenerateStrategy.keyGeneratorName: "snowflake" is not defined; keyGenerators: (none)`, 13},
		{"binding table not sharded", ssBase + sharding + "  bindingTables: [\"t_order,t_item\"]\n",
			`rules.!SHARDING.bindingTables[0][1]: "t_item" is not a sharded table`, 22},
		{"single table elsewhere", ssBase + sharding + "- !SINGLE\n  defaultDataSource: ds_0\n  tables: [ds_1.t_user]\n",
			`rules.!SINGLE.tables[0]: "ds_1.t_user": rwshard keeps every unsharded table in defaultDataSource; list only ds_0.* (or *.*) here`, 24},
		{"single default not defined", ssBase + sharding + "- !SINGLE\n  defaultDataSource: ds_9\n",
			`rules.!SINGLE.defaultDataSource: "ds_9" is not defined; dataSources: ds_0, ds_1`, 23},
		// !READWRITE_SPLITTING.
		{"write data source not defined", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw: {writeDataSourceName: ds_9}\n",
			`rules.!READWRITE_SPLITTING.dataSourceGroups.rw.writeDataSourceName: data source "ds_9" is not defined; dataSources: ds_0, ds_1`, 11},
		{"read data source not defined", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw:\n      writeDataSourceName: ds_0\n      readDataSourceNames:\n        - ds_1\n        - ds_2\n",
			`rules.!READWRITE_SPLITTING.dataSourceGroups.rw.readDataSourceNames[1]: data source "ds_2" is not defined`, 15},
		{"write is also read", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw: {writeDataSourceName: ds_0, readDataSourceNames: [ds_0]}\n",
			"rules.!READWRITE_SPLITTING.dataSourceGroups.rw.readDataSourceNames[0]: ds_0 is the write data source", 11},
		{"no write data source", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw: {readDataSourceNames: [ds_0]}\n",
			"rules.!READWRITE_SPLITTING.dataSourceGroups.rw: no writeDataSourceName", 11},
		{"dynamic strategy", ssBase + "- !READWRITE_SPLITTING\n  dataSources:\n    rw:\n      dynamicStrategy: {autoAwareDataSourceName: x}\n",
			"rules.!READWRITE_SPLITTING.dataSources.rw.dynamicStrategy: dynamic strategies (roles from a !DB_DISCOVERY rule) are not supported", 12},
		{"dynamic type", ssBase + "- !READWRITE_SPLITTING\n  dataSources:\n    rw:\n      type: Dynamic\n      props: {auto-aware-data-source-name: x}\n",
			`rules.!READWRITE_SPLITTING.dataSources.rw.type: "Dynamic" is not supported: only Static groups`, 12},
		{"transactional reads on replicas", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw: {writeDataSourceName: ds_0, transactionalReadQueryStrategy: DYNAMIC}\n",
			`rules.!READWRITE_SPLITTING.dataSourceGroups.rw.transactionalReadQueryStrategy: "DYNAMIC" is not supported`, 11},
		{"mixed shapes", ssBase + "- !READWRITE_SPLITTING\n  dataSources:\n    rw:\n      writeDataSourceName: ds_0\n      staticStrategy: {writeDataSourceName: ds_0}\n",
			"rules.!READWRITE_SPLITTING.dataSources.rw: mixes writeDataSourceName/readDataSourceNames, staticStrategy and type/props", 11},
		{"load balancer not defined", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw: {writeDataSourceName: ds_0, readDataSourceNames: [ds_1], loadBalancerName: lb}\n",
			`rules.!READWRITE_SPLITTING.dataSourceGroups.rw.loadBalancerName: load balancer "lb" is not defined; loadBalancers: (none)`, 11},
		{"load balancer type", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups: {}\n  loadBalancers:\n    lb: {type: TRANSACTION_RANDOM}\n",
			`rules.!READWRITE_SPLITTING.loadBalancers.lb.type: load balancer type "TRANSACTION_RANDOM" is not supported; supported: ROUND_ROBIN, RANDOM, WEIGHT`, 12},
		{"load balancer props", ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups: {}\n  loadBalancers:\n    lb: {type: RANDOM, props: {seed: 1}}\n",
			"rules.!READWRITE_SPLITTING.loadBalancers.lb.props.seed: RANDOM takes no properties", 12},
		{"missing weight", ssBase + `- !READWRITE_SPLITTING
  dataSourceGroups:
    rw: {writeDataSourceName: ds_0, readDataSourceNames: [ds_1], loadBalancerName: lb}
  loadBalancers:
    lb: {type: WEIGHT, props: {}}
`, "rules.!READWRITE_SPLITTING.loadBalancers.lb.props: no weight for read data source ds_1 of group rw", 13},
		{"weight of no read data source", ssBase + `- !READWRITE_SPLITTING
  dataSourceGroups:
    rw: {writeDataSourceName: ds_0, readDataSourceNames: [ds_1], loadBalancerName: lb}
  loadBalancers:
    lb: {type: WEIGHT, props: {ds_1: 1, ds_0: 2}}
`, "rules.!READWRITE_SPLITTING.loadBalancers.lb.props.ds_0: weight for ds_0, which is not a read data source of a group using load balancer lb", 13},
		{"bad weight", ssBase + `- !READWRITE_SPLITTING
  dataSourceGroups:
    rw: {writeDataSourceName: ds_0, readDataSourceNames: [ds_1], loadBalancerName: lb}
  loadBalancers:
    lb: {type: WEIGHT, props: {ds_1: -1}}
`, "rules.!READWRITE_SPLITTING.loadBalancers.lb.props.ds_1: -1: weights must be finite numbers >= 0", 13},
		// Data sources.
		{"no jdbcUrl", "dataSources:\n  ds_0: {username: u, jdbcUrl: jdbc:mysql://h/db}\n  ds_1: {username: u}\nrules: []\n",
			"dataSources.ds_1: no jdbcUrl: rwshard connects with go-sql-driver/mysql, not through a Java pool (dataSourceClassName, driverClassName); add jdbcUrl: jdbc:mysql://host:3306/db", 3},
		{"unknown data source key", "dataSources:\n  ds_0:\n    jdbcUrl: jdbc:mysql://h/db\n    autoCommit: false\nrules: []\n",
			"dataSources.ds_0.autoCommit: unknown key; valid keys here: jdbcUrl, url, username, password, dataSourceProperties, connectionTestQuery", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rulesFromYAML(tc.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var ce *rwshard.ConfigError
			require.True(t, errors.As(err, &ce), "%T", err)
			if tc.line > 0 {
				assert.Equal(t, tc.line, ce.Line, "line of %v", err)
			}
		})
	}
}
