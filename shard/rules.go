package shard

import "time"

// Rules is a validated sharding configuration: which data sources exist,
// how each logical table maps to physical tables in them, and how rows are
// placed. It is immutable once built; a reload builds new Rules and swaps
// them atomically.
type Rules struct {
	// DataSources by name ("ds_0"); each is a primary + replicas group.
	DataSources map[string]*DataSource
	// Tables by logical name, lower case ("t_order").
	Tables map[string]*TableRule
	// BindingGroups lists groups of logical tables sharded alike (same
	// columns, same algorithms, same data node layout): a join of tables
	// of one group is routed within one shard.
	BindingGroups [][]string
	// Broadcast tables exist in full in every data source: written to all,
	// read from one.
	Broadcast []string
	// DefaultDataSource holds every table that is neither sharded nor
	// broadcast. Empty: such tables are an error.
	DefaultDataSource string
	// MaxBroadcastShards bounds the fan-out of a read without a shard key;
	// 0 means no bound. RefuseBroadcastReads makes such reads an error.
	MaxBroadcastShards   int
	RefuseBroadcastReads bool
	// AllowBroadcastWrites runs an UPDATE, DELETE or INSERT … SELECT of
	// any sharded table without a shard key on every data node of the
	// table, in one transaction (ShardingSphere's behaviour); without it,
	// and without TableRule.AllowBroadcastWrites, such a write fails with
	// ErrNoShardKey.
	AllowBroadcastWrites bool
	// KeyGenerators by name.
	KeyGenerators map[string]KeyGenerator
}

// DataSource is one primary + replicas group. DSNs are go-sql-driver/mysql
// DSNs (a ShardingSphere jdbcUrl is converted when the YAML is read).
type DataSource struct {
	Name     string
	Primary  string   // DSN
	Replicas []string // DSNs
	// Balance and Weights as in rwshard.Config (by replica position here).
	Balance string
	Weights []float64
}

// DataNode is one physical table: data source and table name.
type DataNode struct {
	DataSource string
	Table      string
}

func (d DataNode) String() string { return d.DataSource + "." + d.Table }

// TableRule maps one logical table to its data nodes.
type TableRule struct {
	Logical string
	// DataNodes in a stable order (as the expression or list gave them).
	DataNodes []DataNode
	// DatabaseStrategy picks data sources, TableStrategy tables within
	// them; nil means "all of them" (e.g. one table per data source).
	DatabaseStrategy *Strategy
	TableStrategy    *Strategy
	// KeyColumn and KeyGenerator name the generated key: an INSERT that
	// omits KeyColumn gets a value from the generator.
	KeyColumn    string
	KeyGenerator string
	// AllowBroadcastWrites is Rules.AllowBroadcastWrites for this table
	// only (the table written, not the tables a statement reads).
	AllowBroadcastWrites bool
}

// Strategy shards on one column with one algorithm.
type Strategy struct {
	Column    string // lower case
	Algorithm Algorithm
	// AlgorithmName is the name the configuration gave it, for messages.
	AlgorithmName string
}

// Algorithm places a sharding value among target names (data sources or
// tables). It is pure and safe for concurrent use. Custom algorithms
// implement it; the built-in ones come from NewAlgorithm.
type Algorithm interface {
	// Shard returns the one target an exact value (=, IN element, INSERT
	// value) belongs to.
	Shard(targets []string, v Value) (string, error)
	// ShardRange returns the targets that may hold values in r (BETWEEN,
	// <, >); every target when the algorithm cannot narrow a range.
	ShardRange(targets []string, r Range) ([]string, error)
}

// AlgorithmFunc adapts a function to Algorithm for exact values; ranges
// go to every target.
type AlgorithmFunc func(targets []string, v Value) (string, error)

func (f AlgorithmFunc) Shard(targets []string, v Value) (string, error) { return f(targets, v) }
func (f AlgorithmFunc) ShardRange(targets []string, _ Range) ([]string, error) {
	return targets, nil
}

// Value is a sharding value as it comes from SQL literals or bound
// arguments: int64, uint64, float64, string, []byte, time.Time, or nil.
type Value = any

// Range is an interval of sharding values; a nil bound is open-ended.
// Bounds are inclusive unless the Exclusive flag says otherwise.
type Range struct {
	Lo, Hi                   Value
	LoExclusive, HiExclusive bool
}

// KeyGenerator produces keys for inserts that omit the key column.
type KeyGenerator interface {
	NextID() (int64, error)
}

// Clock is the time source of key generators (tests replace it).
type Clock func() time.Time
