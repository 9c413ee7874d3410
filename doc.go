// Package rwshard is a database/sql driver for MySQL and MariaDB that
// splits reads and writes across one primary and N replicas, in-process.
//
//	db, err := sql.Open("rwshard",
//		"app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop?parseTime=true")
//
// The first host is the primary. Every statement is classified by its SQL
// text (router.Classify): a plain, non-locking read in autocommit may run
// on a replica picked by the balancing policy; everything else, and
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
// Three ways in: sql.Open with a DSN (ParseDSN), NewConnector with a Config
// and sql.OpenDB, or OpenDB over existing *sql.DB pools (go-sqlmock in unit
// tests). Neither sql.Open nor NewConnector does network I/O: health probes
// start in the background (see Connector.Ready).
//
// Sharding is a module of its own, github.com/rwshard/rwshard/shard: a
// blank import of it registers it, and a Config with RulesFile or Rules
// needs it.
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
