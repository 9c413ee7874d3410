// Package rwshard is a database/sql driver for MySQL and MariaDB that
// splits reads and writes across one primary and N replicas, in-process.
//
//	db, err := sql.Open("rwshard",
//		"app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop?parseTime=true")
//
// The first host is the primary. Every statement is classified by its SQL
// text (Explain shows the class): a plain, non-locking read in autocommit
// may run on a replica picked by the balancing policy; everything else, and
// anything the classifier cannot prove to be a plain read, runs on the
// primary. Statements that change session state (SET, USE, temporary
// tables, LOCK TABLES, GET_LOCK, PREPARE, text BEGIN, autocommit=0) pin the
// logical connection to one primary connection; transactions from BeginTx
// run on one connection from start to end.
//
// Hints in the context (package hint) or in a SQL comment
// (/* rwshard:primary */) override the decision for reads; no hint sends a
// write to a replica.
//
// Replica pools (Config.Pools) keep traffic classes apart: a read hinted
// hint.Pool(ctx, "reporting"), or matched by a pool rule (Config.PoolRules:
// the tables it reads, or a regular expression over its text), runs only
// on that pool's replicas, which take no other reads. A hint beats a rule;
// neither moves a statement bound to the primary. The rule decision is
// cached per statement text with its classification.
//
// Three ways in: sql.Open with a DSN (ParseDSN), NewConnector with a Config
// and sql.OpenDB, or OpenDB over existing *sql.DB pools (go-sqlmock in unit
// tests). Neither sql.Open nor NewConnector does network I/O: health probes
// start in the background (see Connector.Ready).
//
// Sharding is a module of its own, github.com/rwshard/rwshard/shard: a
// blank import of it registers it, and a Config whose Sharding names
// rules needs it.
//
// Read-your-writes has a scope: the Session in the context
// (WithSession, Connector.ResumeSession), else the process's scope of the
// cluster, shared by every connector on it. In a sharded
// connector every data source is a replication cluster of its own, with
// GTIDs of its own (usually all in domain 0), so a Session keeps its
// writes per data source: a read of one data source waits only for the
// session's writes there, never for another's, and the session window
// runs per data source too. Session tokens carry every part (rws2; a
// session of one unsharded connector still exports rws1).
//
// # DSN parameters
//
// A DSN is go-sql-driver/mysql's with several hosts, the first the
// primary, and rwshard's own parameters under the "rwshard." prefix; every
// other parameter goes to go-sql-driver for every node. An unknown
// rwshard parameter is an error naming it, and so is one of rwshard's
// written without the prefix (go-sql-driver would send it to the server
// as a session variable). Durations are Go durations (500ms, 3s).
//
//	rwshard.names               host names for hints, stats, logs        primary,replica1,replica2,…
//	rwshard.topology            replication, galera                      replication
//	rwshard.galeraWriters       Galera nodes by writer preference        none (lowest wsrep_local_index)
//	rwshard.galeraNoFailback    keep the Galera writer while it serves   false
//	rwshard.galeraDonor         a Galera donor node serves               false
//	rwshard.galeraMaxRecvQueue  fence reads above this receive queue     0 (no limit)
//	rwshard.galeraMaxWriters    Galera nodes that take writes            1
//	rwshard.balance             round_robin, random, weighted,
//	                            least_in_flight, latency                 round_robin (weighted with weights)
//	rwshard.weights             one number per host, primary first       none
//	rwshard.pools               replica pools: reporting:replica3|replica4 none
//	rwshard.poolFallback        error, primary, default or a pool        error
//	rwshard.poolTables          pool rules by table:
//	                            reporting:report_*|audit.*,batch:exports none
//	rwshard.readOnlyTx          primary, replica                         primary
//	rwshard.replicaFunctions    stored functions safe on replicas, or *  none
//	rwshard.connectTimeout      bounds dial and handshake                3s
//	rwshard.connMaxLifetime     keep it below the servers' wait_timeout  3m
//	rwshard.connMaxIdleTime     capped below the servers' wait_timeout   1m
//	rwshard.maxOpenConns        per node, 0 unlimited                    0
//	rwshard.maxIdleConns        per node                                 16
//	rwshard.fleetSize           processes sharing each node's
//	                            max_connections, 0 no share              0
//	rwshard.connWait            wait for a connection at the limit,
//	                            then ErrConnBudget; 0 the context's      0
//	rwshard.stmtCacheSize       prepared statements per connection       256
//	rwshard.classifierCacheSize                                          4096
//	rwshard.consistency         eventual, session, causal, universal     causal (OpenDB: eventual)
//	rwshard.sessionWindow       session reads on the primary after a
//	                            write, when no replica horizon is known  2s
//	rwshard.causalWait          wait (MASTER_GTID_WAIT on a replica),
//	                            fast (only replicas known to have it)    wait
//	rwshard.causalTimeout                                                1s
//	rwshard.maxReplicaLag       fence replicas above it, 0 no limit      30s
//	rwshard.fallback            primary, error                           primary
//	rwshard.txReplay            replay a transaction whose connection
//	                            was lost before COMMIT                   false
//	rwshard.replayLimit         statements a replayable transaction holds 256
//	rwshard.txIdleTimeout       roll back a transaction idle this long   0 (off)
//	rwshard.txWarnAge           event for a transaction older than it    0 (off)
//	rwshard.holdWarn            event for a transaction or open result
//	                            set holding a connection longer          0 (off)
//	rwshard.holdLimit           end such a hold this old                 0 (off)
//	rwshard.writePause          wait for a primary, 0 fail at once       5s
//	rwshard.health              probes on or off                         true (OpenDB: false)
//	rwshard.probeInterval                                                1s
//	rwshard.probeTimeout                                                 500ms
//	rwshard.program             program name in connection attributes    executable's name
//	rwshard.failAfter           failures in a row that take a node out   3
//	rwshard.heartbeatTable      a pt-heartbeat table                     none
//	rwshard.heartbeatWrite      write the heartbeat (needs the table)    false
//	rwshard.retryBudget         retries as a share of requests           0.1
//	rwshard.routeLog            one log/slog line per statement          false
//	rwshard.logArgs             literals and arguments in the route log  false
//	rwshard.driverLog           go-sql-driver's log lines: stderr, slog,
//	                            off (see Config.DriverLog)               stderr
//	rwshard.resetSession        end session state when database/sql
//	                            hands the connection to its next user    false
//	rwshard.rulesFile           a sharding rules file (URL-escaped)      none
//	rwshard.xa                  XA transactions across shards            false
//	rwshard.xaRecoverInterval   resolve prepared XA branches, 0 off      10s
//	rwshard.shardConcurrency    shards of one read run at once           8
//
// Config documents each field; docs/routing.md has the full table with what
// each value allows.
//
// # Errors
//
// Errors from the server reach the caller as go-sql-driver/mysql returns
// them, *mysql.MySQLError, unwrapped (GORM and others type-assert them),
// in sharded mode too. rwshard's own errors are:
//
//   - *ConfigError: a configuration value rwshard cannot accept, naming the
//     key and the value (never a password); it wraps the cause, such as
//     balance.ErrUnknownPolicy or a *balance.WeightError;
//   - *RouteError: a statement rwshard could not route or run, naming the
//     node, the routing reason and the start of the statement (string
//     literals redacted, never its arguments); it wraps one of the
//     sentinels below, a *hint.Error for a malformed comment hint, or the
//     cause of a failed connection.
//
// Sentinels, matched with errors.Is: ErrPrimaryUnavailable (a statement
// that needs the primary waited WritePause without one), ErrSplitBrain,
// ErrWriteToReplica (a node hint aimed a statement that is not a plain read
// at a replica), ErrUnknownNode, ErrNoReplica (Fallback "error"),
// ErrBrokenConnection, ErrSessionLost (a pinned session's connection
// broke) and ErrClosed. The sharding module adds its own (shard.ErrNoShardKey,
// *shard.CommitError, …).
package rwshard
