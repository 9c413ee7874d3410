package rwshard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rwshard/rwshard/internal/redact"
)

// Sentinel errors. Match them with errors.Is; rwshard wraps them in a
// *RouteError or *ConfigError that names the node, statement or key.
var (
	// ErrPrimaryUnavailable: a statement that needs the primary could not
	// reach it. It is never sent to a replica instead.
	ErrPrimaryUnavailable = errors.New("primary unavailable")
	// ErrWriteToReplica: a hint named a replica for a statement that is not
	// a plain read. The statement was not sent.
	ErrWriteToReplica = errors.New("statement is not a plain read; refusing to send it to a replica")
	// ErrUnknownNode: a hint named a node that is not configured.
	ErrUnknownNode = errors.New("no such node")
	// ErrBrokenConnection: the backend connection broke before the
	// statement was sent, and retrying on fresh connections failed too. It
	// deliberately does not wrap driver.ErrBadConn: database/sql must not
	// retry what rwshard has already retried.
	ErrBrokenConnection = errors.New("backend connection broken")
	// ErrSessionLost: the pinned backend connection of a session (open
	// transaction, SET variables, temporary tables, locks) broke; the
	// session state is gone and the logical connection is discarded.
	ErrSessionLost = errors.New("session connection lost; its transaction and session state are gone")
	// ErrOutcomeUnknown: the statement (a write, or COMMIT) was sent and
	// its connection broke before the answer came: it may or may not have
	// run. Unlike the errors that prove nothing was sent (a connect
	// failure, driver.ErrBadConn), retrying it blindly may apply it twice;
	// check its effect first, or make it idempotent (the AWS JDBC wrapper's
	// SQLState 08007 "transaction resolution unknown").
	ErrOutcomeUnknown = errors.New("connection broke after the statement was sent: its outcome is unknown")
	// ErrUnknownPool: a hint named a replica pool Config.Pools does not
	// have.
	ErrUnknownPool = errors.New("no such replica pool")
	// ErrTxIdleTimeout: the transaction ran no statement for
	// Config.TxIdleTimeout; rwshard closed its connection, so the server
	// rolled it back and freed its locks. Commit returns it; nothing of
	// the transaction was committed.
	ErrTxIdleTimeout = errors.New("transaction idle longer than rwshard.txIdleTimeout: rolled back")
	// ErrConnBudget: a node's pool was at its limit (MaxOpenConns, or its
	// share of the server's max_connections, see Config.FleetSize) and no
	// connection came free within Config.ConnWait or the statement's
	// context. Nothing was sent. The error names the node and the limit.
	ErrConnBudget = errors.New("connection budget used up")
	// ErrHoldLimit: the logical connection held a backend connection (a
	// transaction, or a result set not closed) longer than
	// Config.HoldLimit; rwshard closed it, so the server rolled its
	// transaction back. Nothing of the transaction was committed.
	ErrHoldLimit = errors.New("connection held longer than rwshard.holdLimit: closed")
	// ErrClosed: the connector was closed.
	ErrClosed = errors.New("connector closed")
	// ErrNoReplica: no replica qualified for a read and Config.Fallback is
	// "error".
	ErrNoReplica = errors.New("no replica qualifies for this read")
	// ErrSplitBrain: more than one node is writable; rwshard refuses to
	// guess which is the primary and sends no write.
	ErrSplitBrain = errors.New("more than one writable node (split brain); writes refused")
	// errConnect: no connection to the node could be opened, so nothing
	// was sent; wrapped with the cause.
	errConnect = errors.New("cannot connect")
)

// RouteError reports a statement that rwshard could not route or run. It
// names the node and the reason of the routing decision, and quotes the
// start of the statement (never its arguments). Errors returned by the
// server (*mysql.MySQLError) are not wrapped: they reach the caller as
// go-sql-driver/mysql returns them.
type RouteError struct {
	Node      string // node name; empty when no node was chosen
	Reason    string // routing reason, e.g. "write", "hint-node"
	Statement string // start of the SQL text
	Err       error
}

func (e *RouteError) Error() string {
	var b strings.Builder
	b.WriteString("rwshard: ")
	if e.Node != "" {
		b.WriteString("node ")
		b.WriteString(e.Node)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	if e.Reason != "" {
		b.WriteString(" (route: ")
		b.WriteString(e.Reason)
		b.WriteString(")")
	}
	if e.Statement != "" {
		fmt.Fprintf(&b, " in %q", e.Statement)
	}
	return b.String()
}

func (e *RouteError) Unwrap() error { return e.Err }

// hintErr is the error of a statement whose comment hint cannot be
// honoured (a *hint.Error, the one error the classifier returns): not
// sent, naming the hint and the statement.
func hintErr(q string, err error) error {
	return &RouteError{Reason: "hint", Statement: quote(q), Err: err}
}

// quote shortens a statement for an error message, its string literals
// redacted.
func quote(sql string) string { return redact.Quote(sql) }

// ConfigError reports a configuration rwshard cannot accept, from a DSN,
// a Config or a sharding rules file. Key is the key at fault as the
// configuration wrote it ("rwshard.weights", "weights[replica3]",
// "tables.t_order.tableStrategy.algorithm"); File and Line say where, when
// it came from a file. Passwords are never included.
type ConfigError struct {
	File  string
	Line  int
	Key   string
	Value string
	Err   error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("rwshard: config")
	loc := e.File
	if e.Line > 0 {
		if loc != "" {
			loc += ":"
		} else {
			loc = "line "
		}
		loc += strconv.Itoa(e.Line)
	}
	if loc != "" {
		b.WriteString(" " + loc)
	}
	if e.Key != "" {
		if loc != "" {
			b.WriteString(":")
		}
		b.WriteString(" " + e.Key)
		if e.Value != "" {
			b.WriteString("=" + strconv.Quote(e.Value))
		}
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(unprefixed(e.Err.Error()))
	}
	return b.String()
}

// unprefixed is an error message without the "rwshard: " (or "rwshard:
// shard: ") it may begin with, so that a wrapped message says it once.
func unprefixed(s string) string {
	for _, p := range []string{"rwshard: shard: ", "rwshard: "} {
		if strings.HasPrefix(s, p) {
			return s[len(p):]
		}
	}
	return s
}

func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(key, value string, format string, args ...any) *ConfigError {
	return &ConfigError{Key: key, Value: value, Err: fmt.Errorf(format, args...)}
}
