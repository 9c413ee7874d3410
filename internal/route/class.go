package route

import "github.com/rwshard/rwshard/hint"

// Kind is what a statement means for routing. The zero value is Unknown,
// and Unknown routes to the primary.
type Kind uint8

const (
	// Unknown: the classifier could not prove anything; primary.
	Unknown Kind = iota
	// Read is a plain, non-locking read with no session-bound function:
	// the only kind that may run on a replica.
	Read
	// SessionRead reads something bound to the connection or to the
	// primary's latest state: LAST_INSERT_ID(), FOUND_ROWS(), ROW_COUNT(),
	// @@last_insert_id, @@identity, @@last_gtid, sequences (NEXTVAL, NEXT
	// VALUE FOR), lock functions, SQL_CALC_FOUND_ROWS, SHOW WARNINGS/ERRORS.
	// Also CONNECTION_ID(), the variables a connection sets on its primary
	// connection only (@@foreign_key_checks, the isolation level, …), SHOW
	// [SESSION] STATUS, SHOW SESSION|LOCAL VARIABLES, SHOW PROFILE(S) and
	// EXPLAIN FOR CONNECTION (see Classify for the full list); and the SHOW
	// statements that describe the server itself (MASTER/BINLOG STATUS,
	// REPLICA STATUS, PROCESSLIST, GLOBAL STATUS, VARIABLES, ENGINE, …),
	// whose answer on a replica would be the replica's. Primary.
	SessionRead
	// LockingRead is a SELECT with FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE
	// (with or without NOWAIT / SKIP LOCKED / WAIT n). Primary.
	LockingRead
	// Write changes data, schema or server state (DML, DDL, CALL, LOAD DATA,
	// REPLACE, INSERT … SELECT, SELECT … INTO, user-variable assignment, SET,
	// transaction control, …). Primary.
	Write
)

// String returns the kind as used in plan reasons.
func (k Kind) String() string {
	switch k {
	case Read:
		return "read"
	case SessionRead:
		return "session-read"
	case LockingRead:
		return "locking-read"
	case Write:
		return "write"
	default:
		return "unknown"
	}
}

// Effect is a set of consequences a statement has on the logical session.
type Effect uint16

const (
	// Pin: the statement changes session state (SET, USE, CREATE TEMPORARY
	// TABLE, LOCK TABLES, GET_LOCK, SQL-level PREPARE, user-variable
	// assignment): the logical connection must stay on one primary
	// connection until it is closed or reset. Also DROP TEMPORARY TABLE,
	// SELECT … INTO @var, CALL, EXECUTE, HANDLER, GET DIAGNOSTICS, FLUSH
	// (… WITH READ LOCK holds a lock) and MariaDB's BACKUP STAGE/LOCK.
	Pin Effect = 1 << iota
	// TxBegin: a text transaction starts (BEGIN, BEGIN WORK, START
	// TRANSACTION …, XA START/BEGIN). Pinned until TxEnd.
	TxBegin
	// TxEnd: a text transaction ends (COMMIT, ROLLBACK without TO SAVEPOINT,
	// XA COMMIT/ROLLBACK); not when AND CHAIN keeps it open.
	TxEnd
	// AutocommitOff: SET autocommit=0 (or OFF/FALSE). Pinned until
	// AutocommitOn.
	AutocommitOff
	// AutocommitOn: SET autocommit=1 (or ON/TRUE).
	AutocommitOn
	// PrimaryState: a SET of session variables that only statements on the
	// primary are affected by (see PrimaryOnlySet): the logical connection
	// keeps its primary connection for them, and its reads still go to
	// replicas. Classify reports such a statement as Pin; the driver
	// narrows it.
	PrimaryState
	// ReplayState: a SET of session variables that change what reads
	// return, or of user variables, to literals (see ReplayableSet): the
	// driver applies them to every backend connection the logical
	// connection uses, replicas included, instead of pinning it. Classify
	// reports such a statement as Pin; the driver narrows it.
	ReplayState
	// Lock: GET_LOCK takes a named lock, which belongs to the server
	// connection: the logical connection keeps its primary connection
	// until the lock is released (Unlock); its reads still go to replicas.
	Lock
	// Unlock: RELEASE_LOCK or RELEASE_ALL_LOCKS.
	Unlock
	// TempTable: CREATE or DROP TEMPORARY TABLE. The table lives on one
	// server connection: the driver sends the statements that name it
	// there, and the others where they would go.
	TempTable
	// UserVars: the statement assigns user variables from expressions
	// (SET @v = expr, SELECT … @v := …, SELECT … INTO @v; see
	// AssignedUserVars): it runs on the primary connection, and the
	// driver reads the values it produced and applies them to the other
	// backend connections, as ReplayState's. Classify reports such a
	// statement as Pin; the driver narrows it.
	UserVars
)

// Has reports whether e contains all of f.
func (e Effect) Has(f Effect) bool { return e&f == f }

// Class is the classification of one SQL string (possibly several
// statements).
type Class struct {
	Kind   Kind
	Effect Effect
	// Hint merges every comment hint found in the text (see hint.Parse).
	Hint hint.Hint
	// Statements is the number of statements in the text (1 for most).
	Statements int
	// Functions lists the functions the text calls that MySQL and MariaDB
	// do not build in (lower case, without schema): stored functions,
	// which may write. The driver sends a Read that calls one to the
	// primary unless the configuration says the function is safe on
	// replicas. Shared: do not modify.
	Functions []string
	// Tag is the value the Classifier's tag function computed for the
	// text and this class (see NewTaggingClassifier), cached with it; 0
	// without one.
	Tag int
}
