package rwshard

import (
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/balance"
	"github.com/rwshard/rwshard/health"
)

// Defaults applied by NewConfig (docs/routing.md's DSN table lists them).
const (
	defaultBalance             = "round_robin"
	defaultConnectTimeout      = 3 * time.Second
	defaultConnMaxLifetime     = 3 * time.Minute
	defaultConnMaxIdleTime     = time.Minute
	defaultMaxIdleConns        = 16
	defaultStmtCacheSize       = 256
	defaultClassifierCacheSize = 4096
	defaultMaxReplicaLag       = 30 * time.Second
	defaultSessionWindow       = 2 * time.Second
	defaultCausalTimeout       = time.Second
	defaultWritePause          = 5 * time.Second
	defaultProbeInterval       = time.Second
	defaultProbeTimeout        = 500 * time.Millisecond
	defaultFailAfter           = 3
	defaultRetryBudget         = 0.1
	defaultShardConcurrency    = 8
	defaultXARecoverInterval   = 10 * time.Second
)

// Consistency says which replicas may serve a read (docs/consistency.md). Its
// scope is the Session in the statement's context (WithSession), or the
// connector (the *sql.DB) when there is none: a program that never heard
// of rwshard reads its own writes.
type Consistency string

const (
	// Eventual: any healthy replica within the lag limit.
	ConsistencyEventual Consistency = "eventual"
	// Session: after a write in the scope, its reads use only replicas
	// that the probes' GTID samples show to have the data as of that
	// write, else the primary. No cost per write; reads go to the primary
	// for about a probe interval after each write.
	ConsistencySession Consistency = "session"
	// Causal (default): after a write in the scope, its reads use replicas
	// that have applied the write's GTID, or wait for it (MASTER_GTID_WAIT
	// / WAIT_FOR_EXECUTED_GTID_SET) up to CausalTimeout on the replicas
	// closest to it, else the primary. The GTID comes back in the write's
	// own OK packet (MariaDB session tracking): no statement is added
	// (docs/consistency.md).
	ConsistencyCausal Consistency = "causal"
	// Universal: a read sees every write acknowledged before it began, by
	// any process: it needs a position of the primary taken after it
	// began (reads arriving together share one fetch), then a replica
	// that has it, as a causal read does. One primary round trip per
	// batch of reads, and a wait on the replica (docs/consistency.md).
	ConsistencyUniversal Consistency = "universal"
)

// CausalWait says how a causal read finds a replica that has the GTID.
type CausalWait string

const (
	// CausalWaitOnReplica picks a healthy replica and waits there for the
	// GTID, up to CausalTimeout (default).
	CausalWaitOnReplica CausalWait = "wait"
	// CausalFast uses only replicas already known (from probes) to have
	// the GTID, else the primary: no waiting, no extra round trip.
	CausalFast CausalWait = "fast"
)

// Topology says what the hosts are (docs/galera.md).
type Topology string

const (
	// TopologyReplication: a primary and asynchronous replicas; the
	// primary is the node with read_only OFF (default).
	TopologyReplication Topology = "replication"
	// TopologyGalera: the hosts are the nodes of one Galera cluster, every
	// one writable. rwshard writes on one of them, the same for every
	// process with the same configuration (Config.Galera.Writers), and reads on
	// the others that serve.
	TopologyGalera Topology = "galera"
)

// Fallback says what a read does when no replica qualifies.
type Fallback string

const (
	// FallbackPrimary reads from the primary (default), counted and
	// reported as an event.
	FallbackPrimary Fallback = "primary"
	// FallbackError fails the read with ErrNoReplica.
	FallbackError Fallback = "error"
)

// TxReadMode says where a read-only transaction (sql.TxOptions{ReadOnly:
// true}) runs.
type TxReadMode string

// DriverLogMode is where go-sql-driver's own log lines go (see
// Config.DriverLog).
type DriverLogMode string

const (
	// DriverLogStderr leaves go-sql-driver's log lines on stderr.
	DriverLogStderr DriverLogMode = "stderr"
	// DriverLogSlog sends them to Config.Logger (or slog.Default()).
	DriverLogSlog DriverLogMode = "slog"
	// DriverLogOff drops them.
	DriverLogOff DriverLogMode = "off"

	// TxReadPrimary runs read-only transactions on the primary (default):
	// they see everything committed, as without rwshard.
	TxReadPrimary TxReadMode = "primary"
	// TxReadReplica runs them on a replica picked by the balancer, like
	// ShardingSphere's transactional read query strategy "DYNAMIC" or
	// "FIXED" to a replica. Reads may be as stale as the replica.
	TxReadReplica TxReadMode = "replica"
)

// Node is one MySQL/MariaDB server: the primary (Config.Nodes[0]) or a
// replica.
type Node struct {
	// Name identifies the node in hints, weights, errors, logs and stats.
	// Defaults: "primary", "replica1", "replica2", …
	Name string
	// Net is "tcp" (default) or "unix"; Addr is host:port or a socket path.
	Net  string
	Addr string

	// Per-node pool overrides; zero means the Config's value.
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
}

// Config is everything rwshard needs. Build one with NewConfig (defaults)
// or ParseDSN; FormatDSN serializes it. A Config is not used after
// NewConnector has taken its own copy.
type Config struct {
	// Backend holds the go-sql-driver/mysql settings shared by every node:
	// user, password, database and every DSN parameter without the
	// "rwshard." prefix. Its Net and Addr are ignored (each node has its
	// own). RejectReadOnly is kept as given but turned off on the backend
	// connections: rwshard must see a read-only rejection (error 1290 or
	// 1836) itself rather than have it turned into a silent retry.
	Backend *mysql.Config

	// Nodes lists the servers; the first is the primary.
	Nodes []Node

	// Balance names the replica policy: round_robin, random, weighted,
	// least_in_flight or latency; empty means weighted when Weights are
	// given, else round_robin. Policy, when set, overrides it.
	Balance string
	Policy  balance.Policy
	// Pools are named groups of replicas for traffic that must not touch
	// the replicas serving online reads (reports, exports, batch jobs): a
	// read hinted with hint.Pool(ctx, name) or /* rwshard:pool=name */ runs
	// only on the replicas of its pool, and those replicas take no other
	// reads. Pool name → node names; a node is in one pool at most; a
	// pool's connection cap is its nodes' (Node.MaxOpenConns).
	Pools map[string][]string
	// PoolFallback is where a pooled read goes when no replica of its
	// pool qualifies: "error" (the default: ErrNoReplica, naming the
	// pool), "primary", "default" (the replicas in no pool), or the name
	// of another pool (which then has no fallback of its own).
	PoolFallback string
	// PoolRules send reads to a pool without a hint, by the tables they
	// read or a regular expression over their text (see PoolRule): the
	// first rule that matches chooses the pool. A pool hint beats every
	// rule. Rules only choose among replicas, as the hint does: a
	// statement bound to the primary (a write, a locking read, anything in
	// a transaction or a pinned session, hint.Primary, a stored function)
	// stays there, and read-your-writes applies inside the pool. The
	// decision is made once per statement text and cached with its
	// classification. The DSN (rwshard.poolTables) holds rules by table
	// only; rules with Match are Config-only.
	PoolRules []PoolRule

	// Weights by node name, for the weighted policy. Every replica needs
	// a weight (0 = never read from it); a primary weight above 0 makes the
	// primary take that share of reads too.
	Weights map[string]float64

	// ReplicaFunctions lists the stored functions that are safe to run on
	// replicas (they only read). A read that calls any other function the
	// server does not build in goes to the primary (route reason
	// "stored-function"): a function that writes would fail on a replica,
	// or, for a user with SUPER, write there and break its replication.
	// "*" allows every function.
	ReplicaFunctions []string

	// Topology says what the hosts are; TopologyReplication by default.
	Topology Topology
	// Galera tunes how a Galera topology picks its writer and readers.
	Galera GaleraConfig

	// ReadOnlyTx: where sql.TxOptions{ReadOnly: true} transactions run.
	ReadOnlyTx TxReadMode

	// ConnectTimeout bounds dialing and the MySQL handshake of a backend
	// connection. go-sql-driver's own "timeout" bounds only the dial: a
	// host that accepts TCP and never answers would otherwise hang the
	// caller for as long as its context allows.
	ConnectTimeout time.Duration
	// Pool settings of every node's backend pool (see database/sql).
	// ConnMaxLifetime should stay below the servers' wait_timeout.
	// ConnMaxIdleTime is capped below each connection's wait_timeout
	// (read when it connects), and the cap is logged once per node.
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration
	MaxOpenConns    int // 0: unlimited
	MaxIdleConns    int
	// FleetSize is how many processes (connectors) are expected to share
	// each node: each connector's pool of a node then opens at most its
	// share, (max_connections − max_connections/10) / FleetSize minus its
	// probe connections, read from the server; MaxOpenConns, when lower,
	// still applies. 0: no share, but a pool never opens more than the
	// server had free (max_connections − max_connections/10 −
	// Threads_connected) at its last look. A statement that finds the
	// limit reached waits for a connection, up to ConnWait and its
	// context, then fails with ErrConnBudget. See docs/connections.md.
	FleetSize int
	// ConnWait bounds how long a statement waits for a connection of a
	// node's pool at its limit (MaxOpenConns or the share); it then fails
	// with ErrConnBudget. 0: as long as its context allows.
	ConnWait time.Duration

	// ResetSession ends a logical connection's session state that pins
	// it to its primary connection (USE, LOCK TABLES, SQL-level PREPARE,
	// a SET rwshard cannot replay, an open text transaction or
	// autocommit=0) when database/sql hands the connection to its next
	// user: its backend connection is then discarded instead of carried
	// over, so that no statement sends a pooled connection's later reads
	// to the primary for good. On by default: database/sql promises no
	// affinity between db.Query calls, so a correct program keeps such
	// state on a *sql.Conn or a *sql.Tx, which keep it while the program
	// holds them. State that does not move reads carries over either way,
	// as on a go-sql-driver connection: replayed session and user
	// variables, variables set only on the primary (SET SESSION
	// TRANSACTION READ ONLY, FOREIGN_KEY_CHECKS), named locks and
	// temporary tables, which keep the primary connection until they are
	// released or the logical connection is closed. Off
	// (rwshard.resetSession=false): a pin stays with the pooled
	// connection, as with go-sql-driver, and is visible: an event
	// (session-pinned) names the statement that left it, and Stats.Pinned
	// counts such connections.
	ResetSession bool

	// StmtCacheSize is the number of prepared statements kept per backend
	// connection (LRU), so a parameterized query runs in one round trip
	// after the first time; 0 disables the cache. The default, 256, holds
	// the hot statements of a real application (go-tpc's TPC-C prepares 63
	// per connection). The server's max_prepared_stmt_count (16,382 by
	// default) is shared by all its clients: `rwshard check` shows it
	// against connections × StmtCacheSize, and a connection that meets the
	// limit (error 1461) closes half of its cached statements and goes on.
	StmtCacheSize int
	// ClassifierCacheSize bounds the cache of statement classifications.
	ClassifierCacheSize int

	// Consistency of reads after writes; see the constants.
	Consistency Consistency
	// SessionWindow: after a session's write, how long its reads stay on
	// the primary when no replica's lag is known.
	SessionWindow time.Duration
	CausalWait    CausalWait
	CausalTimeout time.Duration
	// MaxReplicaLag fences replicas whose lag is above it; 0: no limit.
	MaxReplicaLag time.Duration
	// Fallback: what a read does when no replica qualifies.
	Fallback Fallback
	// WritePause: how long a write waits for a missing primary to come
	// back or be rediscovered before it fails with ErrPrimaryUnavailable.
	WritePause time.Duration

	// Health turns on probing (role, read_only, replication threads, lag)
	// of every node every ProbeInterval, each probe bounded by
	// ProbeTimeout. On by default with a DSN or NewConfig; off with OpenDB
	// unless its configure functions set it, so that go-sqlmock handles see only the
	// statements under test. With one host there is nothing to probe for
	// and nothing is probed.
	Health        bool
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// FailAfter connection failures in a row on real traffic take a node
	// out of rotation until a probe succeeds.
	FailAfter int
	// HeartbeatTable, when set, is read by the probes as a pt-heartbeat
	// table (ts in UTC: pt-heartbeat --utc) for a lag figure that
	// Seconds_Behind_Master cannot give; HeartbeatWrite makes rwshard write
	// it on the primary every ProbeInterval.
	HeartbeatTable string
	HeartbeatWrite bool
	// RetryBudget: retries may be at most this share of requests (plus a
	// small floor), so an outage cannot multiply the load.
	RetryBudget float64
	// SessionKey signs the session tokens of Connector.SessionToken and is
	// checked by Connector.ResumeSession, so that a client carrying its
	// token cannot edit it. A secret: keep it out of logs and DSNs.
	SessionKey []byte
	// UnsignedTokens lets a connector without a SessionKey make and
	// resume unsigned session tokens: for tokens that never pass through
	// a client's hands. Anyone who holds such a token can edit it.
	UnsignedTokens bool

	// TxReplay replays a BeginTx transaction whose connection is lost
	// before COMMIT (a crash, a broken network, a switchover) on the new
	// primary, comparing every result the caller was given; see
	// ReplayError for what makes one unreplayable. Off by default: a
	// replayed transaction's reads run twice, and the application must
	// not depend on results that differ between runs (NOW(), RAND(),
	// auto-increment ids given to it before the loss make it unreplayable
	// where they differ). ReplayLimit bounds the statements kept (plus
	// 1 MiB of text and arguments).
	TxReplay    bool
	ReplayLimit int

	// TxIdleTimeout rolls back a transaction (BeginTx, text BEGIN,
	// autocommit=0) that runs no statement for this long: rwshard closes
	// its connection (the server rolls back and frees its locks) and the
	// caller's next statement or Commit gets ErrTxIdleTimeout. Reading the
	// rows of a statement is not a statement: a transaction that streams
	// rows for longer is cut too. 0: off.
	TxIdleTimeout time.Duration
	// TxWarnAge raises a LongTransaction event (and counts it) for a
	// transaction open longer than this. 0: off.
	TxWarnAge time.Duration
	// HoldWarn raises a LongHold event, naming the statement that began it
	// and its caller's file:line, for a logical connection that holds a
	// backend connection in a transaction or with a result set not yet
	// closed for longer than this; such holds are counted while they last
	// (Stats.LongHolds), and every hold's time goes to Stats.HoldTimes.
	// Each transaction and result set then costs a lock and a stack
	// capture. 0: off.
	HoldWarn time.Duration
	// HoldLimit ends such a hold once it is this old: rwshard closes the
	// backend connection (the server rolls its transaction back; a
	// statement running in it is not cut) and the logical connection's
	// next statement, Commit or row gets ErrHoldLimit. 0: off.
	HoldLimit time.Duration

	// Observer receives health and routing events, repeats folded.
	Observer health.Observer

	// Tracer sees the start and end of every statement and, if it also
	// implements TxTracer, of every BeginTx transaction (see Tracer). Nil:
	// none, at no cost.
	Tracer Tracer

	// RouteLog logs one line per statement (target, reason, SQL, time) to
	// Logger, or slog.Default() when Logger is nil: ShardingSphere's
	// sql-show. Off by default. String literals and arguments are
	// redacted unless LogArgs.
	RouteLog bool
	LogArgs  bool
	Logger   *slog.Logger
	// DriverLog is where go-sql-driver's own log lines ("closing bad idle
	// connection: …", "unexpected EOF") of rwshard's connections go:
	// DriverLogStderr (default: go-sql-driver's "[mysql] " lines on
	// stderr, as without rwshard), DriverLogSlog (Logger, or
	// slog.Default(), at Warn with the node's name) or DriverLogOff. It
	// sets go-sql-driver's per-connection Config.Logger of rwshard's own
	// connections only: mysql.SetLogger, global to the program, is left
	// alone, and a Backend.Logger of the caller's is replaced only when
	// DriverLog is not the default.
	DriverLog DriverLogMode

	// Sharding makes the connector sharded when it names rules; see
	// ShardingConfig.
	Sharding ShardingConfig

	// DataSource names the replication cluster this connector serves in
	// the read-your-writes state of sessions (Session): a session keeps
	// the writes of each cluster apart, and a read consults those of its
	// own cluster only. The sharding module sets it to each data source's
	// name; empty (the default) is the unnamed cluster. Set it when one
	// session's context reaches connectors of different clusters that the
	// sharding module does not build (two unsharded *sql.DBs), each to a
	// name of its own, stable across the processes that exchange session
	// tokens. Config-only: the DSN does not carry it.
	DataSource string

	// Program names the program in the connection attributes of every
	// backend connection (rwshard_program; see `rwshard fleet`): at most
	// 64 bytes, no comma. Empty: the executable's base name.
	Program string

	// dbs are existing handles given to OpenDB, in Nodes order. They are
	// not closed by rwshard.
	dbs []dbHandle
	// rules: PoolRules compiled by normalize (immutable, shared by
	// clones).
	rules []poolRule
	// defaulted: made by NewConfig (or ParseDSN), so a zero field is a
	// value the caller chose. A Config written as a literal gets the
	// defaults of NewConfig for every zero field instead (see normalize).
	defaulted bool
}

// NewConfig returns a Config with every default set and no nodes. Start
// from it: in a Config built by NewConfig or ParseDSN a zero value means
// zero (MaxReplicaLag 0: no lag limit, WritePause 0: fail at once), while
// a Config written as a literal, rwshard.Config{…}, gets NewConfig's
// default for each field left zero, Health included.
func NewConfig() *Config {
	return &Config{
		Backend:             mysql.NewConfig(),
		ReadOnlyTx:          TxReadPrimary,
		DriverLog:           DriverLogStderr,
		PoolFallback:        "error",
		ReplayLimit:         256,
		ConnectTimeout:      defaultConnectTimeout,
		ConnMaxLifetime:     defaultConnMaxLifetime,
		ConnMaxIdleTime:     defaultConnMaxIdleTime,
		MaxIdleConns:        defaultMaxIdleConns,
		StmtCacheSize:       defaultStmtCacheSize,
		ClassifierCacheSize: defaultClassifierCacheSize,
		Consistency:         ConsistencyCausal,
		Topology:            TopologyReplication,
		SessionWindow:       defaultSessionWindow,
		CausalWait:          CausalWaitOnReplica,
		CausalTimeout:       defaultCausalTimeout,
		MaxReplicaLag:       defaultMaxReplicaLag,
		Fallback:            FallbackPrimary,
		WritePause:          defaultWritePause,
		Health:              true,
		ResetSession:        true,
		ProbeInterval:       defaultProbeInterval,
		ProbeTimeout:        defaultProbeTimeout,
		FailAfter:           defaultFailAfter,
		RetryBudget:         defaultRetryBudget,
		Sharding:            ShardingConfig{Concurrency: defaultShardConcurrency, XARecoverInterval: defaultXARecoverInterval},
		defaulted:           true,
	}
}

// fillDefaults gives a Config written as a literal NewConfig's value for
// every field left zero.
func (c *Config) fillDefaults() {
	if c.defaulted {
		return
	}
	def := NewConfig()
	for i := range params {
		p := &params[i]
		switch f := p.field(c).(type) {
		case *time.Duration:
			if *f == 0 {
				*f = *p.field(def).(*time.Duration)
			}
		case *int:
			if *f == 0 {
				*f = *p.field(def).(*int)
			}
		case *float64:
			if *f == 0 {
				*f = *p.field(def).(*float64)
			}
		case *bool:
			if !*f {
				*f = *p.field(def).(*bool)
			}
		case *string:
			if *f == "" {
				*f = *p.field(def).(*string)
			}
		}
	}
	c.defaulted = true
}

// GaleraConfig is the Galera part of a Config, for Topology galera
// (docs/galera.md).
type GaleraConfig struct {
	// Writers lists node names in the order they are preferred as the
	// writer: the first that serves writes. Nodes left out come after, by
	// wsrep_local_index. Empty: the serving node with the lowest
	// wsrep_local_index, as MaxScale's galeramon chooses.
	Writers []string
	// NoFailback keeps the writer while it serves, even when a node
	// preferred before it serves again. Processes that saw different
	// histories may then choose different writers.
	NoFailback bool
	// Donor lets a node that is a state-transfer donor serve reads (and
	// be the writer); by default a donor serves nothing.
	Donor bool
	// MaxRecvQueue fences a node for reads while more write-sets than
	// this wait in its receive queue (wsrep_local_recv_queue); 0: no
	// limit.
	MaxRecvQueue int
	// MaxWriters is how many serving nodes take writes: the writer and
	// the next ones by preference, each logical connection writing on the
	// one with the fewest statements in flight when it takes a
	// connection. Writers serve no reads while another node does. 0 or 1:
	// the writer alone; more means certification conflicts between them.
	MaxWriters int
}

// ShardingConfig is the sharding part of a Config. RulesFile or Rules
// makes the connector sharded: the data sources come from the rules, each
// a primary + replicas group with read/write splitting inside, and
// Config.Nodes must be empty; the rest of the Config applies to every
// data source. Sharding lives in its own module: the program must import
// it (import _ "github.com/rwshard/rwshard/shard"), or NewConnector fails
// with an error saying so.
type ShardingConfig struct {
	// RulesFile is a sharding rules file (YAML, rwshard's own or
	// ShardingSphere-JDBC 5.x).
	RulesFile string
	// Rules are rules built in code: a *shard.Rules.
	Rules any
	// XA makes a transaction over several data sources a MariaDB/MySQL XA
	// transaction: every shard prepares before any commits, so a failure
	// before the commit phase rolls all of them back. Without it each
	// shard commits in turn (see the shard package's CommitError).
	XA bool
	// XARecoverInterval: how often a sharded connector with XA resolves
	// the XA branches a crash left prepared on its data sources' primaries
	// (committed where the transaction's decision row exists, rolled back
	// where it does not), starting in the background when it opens; it is
	// also the age a branch must reach before recovery touches it. 0: off.
	XARecoverInterval time.Duration
	// Concurrency bounds how many shards of one multi-shard read run at
	// once (default 8).
	Concurrency int
}

// Clone returns a deep copy of c. The Policy and the handles given to
// OpenDB are shared, not copied.
func (c *Config) Clone() *Config {
	out := *c
	if c.Backend != nil {
		out.Backend = c.Backend.Clone()
	}
	out.Nodes = slices.Clone(c.Nodes)
	out.Weights = maps.Clone(c.Weights)
	if c.Pools != nil {
		out.Pools = make(map[string][]string, len(c.Pools))
		for k, v := range c.Pools {
			out.Pools[k] = slices.Clone(v)
		}
	}
	if c.PoolRules != nil {
		out.PoolRules = make([]PoolRule, len(c.PoolRules))
		for i, r := range c.PoolRules {
			r.Tables = slices.Clone(r.Tables)
			out.PoolRules[i] = r
		}
	}
	out.ReplicaFunctions = slices.Clone(c.ReplicaFunctions)
	out.Galera.Writers = slices.Clone(c.Galera.Writers)
	out.SessionKey = slices.Clone(c.SessionKey)
	out.dbs = slices.Clone(c.dbs)
	return &out
}

// defaultName is the name of the node at position i.
func defaultName(i int) string {
	if i == 0 {
		return "primary"
	}
	return "replica" + strconv.Itoa(i)
}

// normalize fills defaults and validates. ParseDSN and NewConnector both
// call it, so a Config from either door obeys the same rules.
func (c *Config) normalize() error {
	c.fillDefaults()
	if c.Backend == nil {
		c.Backend = mysql.NewConfig()
	}
	if c.sharded() {
		if len(c.Nodes) > 0 || len(c.dbs) > 0 {
			return configErr("hosts", nodeNames(c.Nodes), "a sharded configuration takes its hosts from the rules (rwshard.rulesFile); give no hosts")
		}
		return c.normalizeSettings()
	}
	if len(c.Nodes) == 0 && len(c.dbs) == 0 {
		return configErr("hosts", "", "no host: give at least the primary, or rwshard.rulesFile for sharding")
	}
	seen := make(map[string]int, len(c.Nodes))
	servers := make(map[string]int, len(c.Nodes)) // sameServer key → node
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Name == "" {
			n.Name = defaultName(i)
		}
		if j, dup := seen[n.Name]; dup {
			return configErr("rwshard.names", n.Name, "name used by nodes %d and %d", j, i)
		}
		seen[n.Name] = i
		if len(c.dbs) > 0 {
			continue // existing handles: no address
		}
		if n.Net == "" {
			n.Net = "tcp"
		}
		if !netName(n.Net) {
			// tcp, tcp4, tcp6, unix, or a network registered with
			// mysql.RegisterDialContext (go-sql-driver checks at dial time)
			return configErr("hosts", n.Net+"("+n.Addr+")", "not a network name")
		}
		if n.Addr == "" {
			return configErr("hosts", n.Name, "empty address")
		}
		key := sameServer(n.Net, n.Addr)
		if j, dup := servers[key]; dup {
			return configErr("hosts", c.Nodes[j].Net+"("+c.Nodes[j].Addr+"),"+n.Net+"("+n.Addr+")",
				"%s and %s are the same server (list each host once)", c.Nodes[j].Name, n.Name)
		}
		servers[key] = i
		if n.MaxOpenConns < 0 || n.MaxIdleConns < 0 || n.ConnMaxLifetime < 0 {
			return configErr("nodes["+n.Name+"]", "", "pool settings must not be negative")
		}
	}
	if c.Balance == "" {
		c.Balance = defaultBalance
		if len(c.Weights) > 0 {
			c.Balance = "weighted"
		}
	}
	if c.Policy == nil {
		if c.Balance == "weighted" {
			if len(c.Weights) == 0 {
				return configErr("rwshard.balance", c.Balance, "needs weights (rwshard.weights)")
			}
		} else if _, err := balance.ByName(c.Balance); err != nil {
			return &ConfigError{Key: "rwshard.balance", Value: c.Balance, Err: err}
		}
	}
	if len(c.Weights) > 0 && c.Balance != "weighted" && c.Policy == nil {
		return configErr("rwshard.weights", "", "weights need rwshard.balance=weighted, not %s", c.Balance)
	}
	for name, w := range c.Weights {
		if _, ok := seen[name]; !ok {
			return configErr("rwshard.weights", name, "weight for a node that does not exist; nodes: %s", nodeNames(c.Nodes))
		}
		if !(w >= 0) || w > 1e12 { // also rejects NaN
			return configErr("rwshard.weights", name+"="+strconv.FormatFloat(w, 'g', -1, 64), "weights must be finite numbers >= 0")
		}
	}
	if c.Policy == nil && len(c.Nodes) > 0 {
		if _, err := c.policy(); err != nil { // weights that cannot work
			return err
		}
	}
	for i, name := range c.Galera.Writers {
		if _, ok := seen[name]; !ok {
			return configErr("rwshard.galeraWriters", name, "not a node; nodes: %s", nodeNames(c.Nodes))
		}
		if slices.Index(c.Galera.Writers, name) != i {
			return configErr("rwshard.galeraWriters", name, "named twice")
		}
	}
	return c.normalizeSettings()
}

// normalizeSettings validates and defaults everything but the hosts.
func (c *Config) normalizeSettings() error {
	if err := checkProgram(c.Program); err != nil {
		return err
	}
	for i := range params {
		p := &params[i]
		if f, ok := p.field(c).(*string); ok && p.one != nil && !slices.Contains(p.one, *f) {
			if *f == "" { // zero value in a hand-built Config: the default
				*f = *p.field(NewConfig()).(*string)
				continue
			}
			return configErr(paramPrefix+p.name, *f, "must be one of %s", strings.Join(p.one, ", "))
		}
	}
	for i := range params {
		p := &params[i]
		switch f := p.field(c).(type) {
		case *time.Duration:
			if *f < 0 {
				return configErr(paramPrefix+p.name, f.String(), "must not be negative")
			}
		case *int:
			if *f < 0 {
				return configErr(paramPrefix+p.name, strconv.Itoa(*f), "must not be negative")
			}
		case *float64:
			if !(*f >= 0) || math.IsInf(*f, 0) {
				return configErr(paramPrefix+p.name, strconv.FormatFloat(*f, 'g', -1, 64), "must be a number >= 0")
			}
		}
	}
	// Zero means the default for settings where zero cannot work.
	c.ProbeInterval = pick(c.ProbeInterval, defaultProbeInterval)
	c.ProbeTimeout = pick(c.ProbeTimeout, defaultProbeTimeout)
	c.FailAfter = pick(c.FailAfter, defaultFailAfter)
	c.Sharding.Concurrency = pick(c.Sharding.Concurrency, defaultShardConcurrency)
	if c.Topology != TopologyGalera {
		switch {
		case len(c.Galera.Writers) > 0:
			return configErr("rwshard.galeraWriters", strings.Join(c.Galera.Writers, ","), "needs rwshard.topology=galera")
		case c.Galera.NoFailback:
			return configErr("rwshard.galeraNoFailback", "true", "needs rwshard.topology=galera")
		case c.Galera.Donor:
			return configErr("rwshard.galeraDonor", "true", "needs rwshard.topology=galera")
		case c.Galera.MaxRecvQueue > 0:
			return configErr("rwshard.galeraMaxRecvQueue", strconv.Itoa(c.Galera.MaxRecvQueue), "needs rwshard.topology=galera")
		case c.Galera.MaxWriters > 1:
			return configErr("rwshard.galeraMaxWriters", strconv.Itoa(c.Galera.MaxWriters), "needs rwshard.topology=galera")
		}
	}
	if c.HeartbeatWrite && c.HeartbeatTable == "" {
		return configErr("rwshard.heartbeatWrite", "true", "needs rwshard.heartbeatTable")
	}
	if t := c.HeartbeatTable; t != "" && !tableName(t) {
		return configErr("rwshard.heartbeatTable", t, "not a table name (table or schema.table, `quoted` parts allowed)")
	}
	return c.checkPools()
}

// checkPools validates Pools, PoolFallback and PoolRules against the node
// names. In a sharded configuration the nodes are the data sources' and
// the sharding module checks the pools' nodes against them; each data
// source's own configuration is checked here again.
func (c *Config) checkPools() error {
	if c.PoolFallback == "" {
		c.PoolFallback = "error"
	}
	names := map[string]bool{}
	for _, n := range c.Nodes {
		names[n.Name] = true
	}
	in := map[string]string{}
	for _, pool := range slices.Sorted(maps.Keys(c.Pools)) {
		if pool == "" || pool == "default" || pool == "error" || pool == "primary" || !netName(pool) {
			return configErr("rwshard.pools", pool, "a pool name is letters, digits, '-', '_', '.', and not default, error or primary")
		}
		if len(c.Pools[pool]) == 0 {
			return configErr("rwshard.pools", pool, "pool has no nodes")
		}
		for _, n := range c.Pools[pool] {
			switch {
			case !names[n] && !c.sharded():
				return configErr("rwshard.pools", pool+":"+n, "no node %q; nodes: %s", n, nodeNames(c.Nodes))
			case in[n] != "":
				return configErr("rwshard.pools", pool+":"+n, "node %q is in pools %s and %s; one at most", n, in[n], pool)
			}
			in[n] = pool
		}
	}
	switch fb := c.PoolFallback; {
	case fb == "error" || fb == "primary" || fb == "default":
	case c.Pools[fb] != nil:
	default:
		return configErr("rwshard.poolFallback", fb, "want error, primary, default or a pool name")
	}
	return c.checkPoolRules()
}

// netName reports a network name as go-sql-driver takes them: letters,
// digits, '-', '_', '.'.
func netName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// sameServer is a key equal for two addresses of one server: host names
// compared without case, localhost and the loopback addresses as one.
func sameServer(network, addr string) string {
	if !strings.HasPrefix(network, "tcp") {
		return network + "(" + addr + ")"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp(" + strings.ToLower(addr) + ")"
	}
	host = strings.ToLower(host)
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		host = "loopback"
	} else if ip != nil {
		host = ip.String()
	}
	return "tcp(" + host + ":" + port + ")"
}

// tableName reports whether s is a table name, table or schema.table,
// each part plain ([0-9A-Za-z_$]) or `backquoted`: the probes put it into
// their SQL as it is.
func tableName(s string) bool {
	for i := 0; i < 2; i++ {
		if strings.HasPrefix(s, "`") {
			end := strings.IndexByte(s[1:], '`')
			if end < 1 {
				return false
			}
			s = s[end+2:]
		} else {
			n := 0
			for n < len(s) && (s[n] == '_' || s[n] == '$' || s[n] >= '0' && s[n] <= '9' ||
				s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z') {
				n++
			}
			if n == 0 {
				return false
			}
			s = s[n:]
		}
		if s == "" {
			return true
		}
		if i == 1 || s[0] != '.' {
			return false
		}
		s = s[1:]
	}
	return false
}

// nodeNames lists node names for error messages.
func nodeNames(nodes []Node) string {
	s := ""
	for i, n := range nodes {
		if i > 0 {
			s += ", "
		}
		s += n.Name
	}
	return s
}

// sharded reports a sharding configuration.
func (c *Config) sharded() bool { return c.Sharding.RulesFile != "" || c.Sharding.Rules != nil }

// readCandidates returns the names the balancing policy is bound to: every
// node, in order. The node that is primary at the time of a pick is not
// usable for reads unless its weight is positive; roles can change at run
// time, the candidate list does not.
func (c *Config) readCandidates() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Name
	}
	return out
}

// policy builds the balancing policy and binds it to the read candidates.
func (c *Config) policy() (balance.Policy, error) {
	p := c.Policy
	if p == nil {
		var err error
		if c.Balance == "weighted" {
			w := maps.Clone(c.Weights)
			if _, ok := w[c.Nodes[0].Name]; !ok {
				w[c.Nodes[0].Name] = 0 // the first host need not be given a weight
			}
			p, err = balance.NewWeighted(w)
			if err != nil {
				return nil, &ConfigError{Key: "rwshard.weights", Err: err}
			}
		} else if p, err = balance.ByName(c.Balance); err != nil {
			return nil, &ConfigError{Key: "rwshard.balance", Value: c.Balance, Err: err}
		}
	}
	if b, ok := p.(balance.Binder); ok {
		if err := b.Bind(c.readCandidates()); err != nil {
			return nil, &ConfigError{Key: "rwshard.weights", Err: err}
		}
	}
	return p, nil
}
