package shard

import (
	"fmt"
	"strings"

	"github.com/rwshard/rwshard"
)

// Config is the specification of a sharding setup: what code fills in,
// what ParseYAML and LoadRules decode a file into. Build validates it and
// resolves it into Rules.
//
// Names. Logical table names are matched without regard to case: Build
// lower-cases them (and sharding and key columns, which MySQL and MariaDB
// always compare case-insensitively), so "T_Order" in a query finds the
// rule of "t_order", as in ShardingSphere. Two logical names that differ
// only in case are an error. Physical names (data nodes) are used exactly
// as written: with lower_case_table_names=0, the default on Linux and the
// setting of the rwshard lab, MySQL and MariaDB table names are
// case-sensitive, so t_order_0 and T_ORDER_0 are different tables. Data
// source and algorithm names are case-sensitive.
type Config struct {
	// DataSources by name ("ds_0"); each is a primary with its replicas.
	DataSources map[string]DataSourceConfig
	// DefaultDataSource holds the tables that are neither sharded nor
	// broadcast; empty makes such tables an error.
	DefaultDataSource string
	// Tables: the sharded tables by logical name.
	Tables map[string]TableConfig
	// DefaultDatabaseStrategy and DefaultTableStrategy apply to tables
	// that do not set their own.
	DefaultDatabaseStrategy *StrategyConfig
	DefaultTableStrategy    *StrategyConfig
	// BindingTables: groups of sharded tables that shard alike, so a join
	// within a group stays within one shard.
	BindingTables [][]string
	// BroadcastTables exist in full in every data source.
	BroadcastTables []string
	// Algorithms by name, referred to by strategies. Build's custom
	// algorithms can be referred to by name as well.
	Algorithms map[string]AlgorithmConfig
	// KeyGenerators by name, referred to by TableConfig.KeyGenerator.
	KeyGenerators map[string]AlgorithmConfig
	// MaxBroadcastShards bounds the fan-out of a read without a shard key
	// (0: no bound); RefuseBroadcastReads makes such a read an error.
	MaxBroadcastShards   int
	RefuseBroadcastReads bool
	// AllowBroadcastWrites runs a write without a shard key on every data
	// node of the table written, in one transaction (Rules.AllowBroadcastWrites);
	// TableConfig.AllowBroadcastWrites allows it for one table.
	AllowBroadcastWrites bool
	// RouteLog asks the driver to log every routing decision (ShardingSphere's
	// sql-show). Rules do not carry it: the driver reads it from the Config
	// and decides how to log (arguments stay redacted).
	RouteLog bool

	// src records where each key came from when the Config was parsed
	// from YAML, so that Build's errors can name the file, line and key
	// as the file wrote them.
	src *configSource
}

// DataSourceConfig is one primary and its replicas, each a
// go-sql-driver/mysql DSN ("user:pw@tcp(10.0.0.1:3306)/shop_0?parseTime=true").
type DataSourceConfig struct {
	Primary  string
	Replicas []string
	// Balance names the replica policy (round_robin, random, weighted,
	// least_in_flight, latency); empty means weighted when Weights are
	// given, else the driver's default.
	Balance string
	// Weights, one per replica in the order of Replicas, for the weighted
	// policy: finite, >= 0, not all 0.
	Weights []float64
}

// TableConfig maps one logical table to its data nodes.
type TableConfig struct {
	// DataNodes is an inline expression ("ds_${0..1}.t_order_${0..3}") or
	// a comma-separated list ("ds_0.t_order_0, ds_1.t_order_1"); the order
	// it gives is the order of the resolved data nodes.
	DataNodes string
	// DatabaseStrategy and TableStrategy: nil means the default strategy
	// of the Config (which may itself be nil: no sharding at that level).
	DatabaseStrategy *StrategyConfig
	TableStrategy    *StrategyConfig
	// KeyGenerator fills in KeyGenerator.Column on inserts that omit it.
	KeyGenerator *KeyGeneratorRef
	// AllowBroadcastWrites is Config.AllowBroadcastWrites for this table.
	AllowBroadcastWrites bool
}

// StrategyConfig shards on one column with one algorithm, or, with None,
// explicitly does not shard at its level even when the Config has a
// default strategy for it (ShardingSphere's "none:").
type StrategyConfig struct {
	Column    string
	Algorithm string
	None      bool
}

// KeyGeneratorRef names the generated key column of a table and the key
// generator that fills it.
type KeyGeneratorRef struct {
	Column    string
	Generator string
}

// AlgorithmConfig is a built-in algorithm or key generator by type, with
// its properties (ShardingSphere 5.x property names).
type AlgorithmConfig struct {
	Type  string
	Props map[string]string
}

// TypeClassBased is ShardingSphere's CLASS_BASED algorithm type: a Java
// class. In rwshard it is a placeholder for a Go algorithm of the same
// name passed to Build in its custom map.
const TypeClassBased = "CLASS_BASED"

// configSource remembers where the keys of a parsed Config came from.
type configSource struct {
	file string
	keys map[string]keyOrigin // Config key path → origin
}

// keyOrigin is the key as the file wrote it and its line.
type keyOrigin struct {
	key  string
	line int
}

// errAt builds the error for the Config key path key, translated to the
// key and line the source file used when the Config was parsed.
func (c *Config) errAt(key string, format string, args ...any) *rwshard.ConfigError {
	e := &rwshard.ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
	c.locate(e)
	return e
}

// wrapAt is errAt for an error from elsewhere.
func (c *Config) wrapAt(key string, err error) *rwshard.ConfigError {
	e := &rwshard.ConfigError{Key: key, Err: err}
	c.locate(e)
	return e
}

func (c *Config) locate(e *rwshard.ConfigError) {
	if c.src == nil {
		return
	}
	e.File = c.src.file
	for k := e.Key; k != ""; k = parentKeyPath(k) {
		if o, ok := c.src.keys[k]; ok {
			e.Key = o.key + e.Key[len(k):]
			e.Line = o.line
			return
		}
	}
}

// parentKeyPath strips the last segment of a key path: "a.b[2]" → "a.b",
// "a.b" → "a", "a" → "".
func parentKeyPath(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i >= 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// Build validates the configuration and resolves it into Rules. custom
// holds Go algorithms by name; strategies refer to them like to the
// algorithms of c.Algorithms (a name in both is an error, except for a
// CLASS_BASED placeholder). Every problem is a *rwshard.ConfigError naming the
// key; the first one found, in a stable order, is returned.
//
// What Build checks:
//   - data sources: at least one; names usable in data nodes; a primary
//     DSN that go-sql-driver/mysql parses, as are the replica DSNs; a known
//     balance policy; one finite weight >= 0 per replica, not all 0,
//     weights only with the weighted policy;
//   - the default data source exists;
//   - algorithms and key generators: a type, properties the type knows,
//     built by NewAlgorithm and NewKeyGenerator;
//   - tables: lower-case logical names unique; data nodes that expand
//     (ExpandDataNodes), without repeats, each in a defined data source;
//     strategies with a column and a defined algorithm; a table whose
//     rows could land on more than one data node (several data sources
//     and no database strategy, or several tables in one data source and
//     no table strategy) is ambiguous and an error, unless it is listed
//     as broadcast instead; key generators with a column and a defined
//     generator;
//   - broadcast tables: unique, not also sharded;
//   - binding groups: at least two sharded tables, each in one group only,
//     with the same number of data nodes in the same data sources (node i
//     of every table in the same data source), and equivalent algorithms
//     at both levels: the same algorithm, or algorithms of the same type
//     and properties, INLINE expressions compared with the table's
//     data-node prefix and the sharding column taken out
//     (t_order_${order_id % 2} and t_order_item_${order_id % 2} are
//     equivalent), as ShardingSphere compares them, and, when they shard
//     tables, tables with the same suffixes in the same order (node i of
//     t_order is t_order_1 where node i of t_order_item is
//     t_order_item_1). The sharding columns may differ in name;
//   - MaxBroadcastShards >= 0;
//   - then the proof (see Check): every target each strategy's algorithm
//     can pick for a key of the right type is one of the table's data
//     nodes: MOD, HASH_MOD and SS_HASH_MOD's remainders below
//     sharding-count, BOUNDARY_RANGE and VOLUME_RANGE's partitions,
//     INTERVAL's steps, the names an INLINE expression gives over the
//     keys >= 0 when they repeat (t_order_${order_id % 4}). The database
//     strategy picks among the data sources of the table's data nodes,
//     the table strategy among the tables of each of them (of the one
//     the database strategy picked, when both shard on one column).
//     Custom algorithms, and INLINE expressions that name a target per
//     key, are not proved. A failure is a *rwshard.ConfigError at the strategy's
//     algorithm key wrapping a *RuleError that names the table, the
//     algorithm, the data source and the missing targets.
func (c *Config) Build(custom map[string]Algorithm) (*Rules, error) {
	rules, chk, err := c.Check(custom)
	if err != nil {
		return nil, err
	}
	if len(chk.Problems) > 0 {
		return nil, chk.Problems[0]
	}
	return rules, nil
}
