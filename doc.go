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
// tests). Errors that rwshard produces are *RouteError or *ConfigError,
// naming the node, statement or key; errors from the server reach the
// caller as go-sql-driver/mysql returns them.
package rwshard
