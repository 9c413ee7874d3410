package rwshard_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// Tier (b) helpers: go-sqlmock *sql.DBs as the primary and the replicas of
// rwshard.OpenDB.
//
// How a test knows where a statement ran, and that no other node got it:
//
//   - every mock matches in order (sqlmock's default) with
//     QueryMatcherEqual, so a mock refuses any statement it was not told to
//     expect, and the refusal comes back as the statement's error (rwshard
//     passes statement errors through and retries only driver.ErrBadConn);
//   - a read answers one row whose only column is the node's name, and an
//     exec answers a LastInsertId that encodes the node (marker), so the
//     caller sees which node answered;
//   - ExpectationsWereMet on every mock (verify, also run at cleanup).
//
// So "err == nil, answer names node X, all mocks met" proves the statement
// ran on X and nowhere else, and for a statement that must not be sent at
// all, "err is rwshard's own error, all mocks met, none busy" proves that
// nothing was sent: a mock that had received it would have answered with
// its refusal instead.

// mockNode is one sqlmock backend.
type mockNode struct {
	name  string
	index int // 0 is the primary
	db    *sql.DB
	mock  sqlmock.Sqlmock
	// hold keeps one backend connection of the mock checked out for the
	// whole test. All database/sql connections of one sqlmock DB are the
	// same *sqlmock value, and it unregisters its DSN when its last
	// connection closes: without hold, the first connection rwshard
	// discards (a broken one, or one carrying session state) would make
	// every later connect to that mock fail. busy() accounts for it.
	hold *sql.Conn
}

// mockPassThrough is a sqlmock value converter that hands the mock exactly
// what rwshard passed to the backend connection.
type mockPassThrough struct{}

func (mockPassThrough) ConvertValue(v any) (driver.Value, error) { return v, nil }

func newMockNode(t testing.TB, index int, conv driver.ValueConverter) *mockNode {
	t.Helper()
	db, mock, err := sqlmock.New(
		sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual),
		sqlmock.ValueConverterOption(conv))
	require.NoError(t, err)
	hold, err := db.Conn(context.Background())
	require.NoError(t, err)
	n := &mockNode{name: mockNodeName(index), index: index, db: db, mock: mock, hold: hold}
	t.Cleanup(func() {
		_ = n.hold.Close()
		_ = n.db.Close() // sqlmock reports an unexpected Close: ignore
	})
	return n
}

// nodeName is rwshard's default name of the node at position i.
func mockNodeName(i int) string {
	if i == 0 {
		return "primary"
	}
	return fmt.Sprintf("replica%d", i)
}

// marker is the LastInsertId by which an exec shows which node ran it.
func (n *mockNode) marker() int64 { return 1000 + int64(n.index) }

// busy is the number of backend connections of n checked out by rwshard.
func (n *mockNode) busy() int { return n.db.Stats().InUse - 1 }

// expectRead expects q with args, answering one row naming the node. The
// rows must be closed.
func (n *mockNode) expectRead(q string, args ...driver.Value) *sqlmock.ExpectedQuery {
	e := n.mock.ExpectQuery(q).
		WillReturnRows(sqlmock.NewRows([]string{"node"}).AddRow(n.name)).
		RowsWillBeClosed()
	if len(args) > 0 {
		return e.WithArgs(args...)
	}
	return e.WithoutArgs()
}

// expectWrite expects q with args as an exec, answering the node's marker
// as LastInsertId and 1 row affected.
func (n *mockNode) expectWrite(q string, args ...driver.Value) *sqlmock.ExpectedExec {
	e := n.mock.ExpectExec(q).WillReturnResult(sqlmock.NewResult(n.marker(), 1))
	if len(args) > 0 {
		return e.WithArgs(args...)
	}
	return e.WithoutArgs()
}

// expect expects q on n as an exec (expectWrite) or, unless exec, a read
// (expectRead).
func (n *mockNode) expect(q string, exec bool) {
	if exec {
		n.expectWrite(q)
	} else {
		n.expectRead(q)
	}
}

// expectError expects q on n as an exec or, unless exec, a query, and
// answers it with err.
func (n *mockNode) expectError(q string, exec bool, err error) {
	if exec {
		n.mock.ExpectExec(q).WillReturnError(err)
	} else {
		n.mock.ExpectQuery(q).WillReturnError(err)
	}
}

// mockCluster is rwshard over one sqlmock primary and N sqlmock replicas.
type mockCluster struct {
	t     testing.TB
	db    *sql.DB // rwshard's
	nodes []*mockNode
}

func newMockCluster(t testing.TB, replicas int, opts ...func(*rwshard.Config)) *mockCluster {
	t.Helper()
	return newMockClusterConv(t, replicas, driver.DefaultParameterConverter, opts...)
}

// newMockClusterConv builds the mocks with conv as sqlmock's converter.
func newMockClusterConv(t testing.TB, replicas int, conv driver.ValueConverter, opts ...func(*rwshard.Config)) *mockCluster {
	t.Helper()
	mc := &mockCluster{t: t}
	var dbs []*sql.DB
	for i := 0; i <= replicas; i++ {
		n := newMockNode(t, i, conv)
		mc.nodes = append(mc.nodes, n)
		dbs = append(dbs, n.db)
	}
	db, err := rwshard.OpenDB(dbs[0], dbs[1:], opts...)
	require.NoError(t, err)
	mc.db = db
	t.Cleanup(func() {
		_ = db.Close()
		mc.verify()
	})
	return mc
}

func (mc *mockCluster) primary() *mockNode { return mc.nodes[0] }

// handOff passes the session of ctx through a token, as to another
// instance of a service, and returns the context that resumed it there.
// mc's Config needs a SessionKey (withTokens).
func (mc *mockCluster) handOff(ctx context.Context) (context.Context, error) {
	c, err := rwshard.ConnectorOf(ctx, mc.db)
	require.NoError(mc.t, err)
	tok, err := c.SessionToken(rwshard.SessionFrom(ctx))
	require.NoError(mc.t, err)
	return c.ResumeSession(context.Background(), tok)
}

// withTokens gives a mock cluster's Config a SessionKey, for handOff.
func withTokens(c *rwshard.Config) { c.SessionKey = []byte("mock session key") }

func (mc *mockCluster) node(name string) *mockNode {
	for _, n := range mc.nodes {
		if n.name == name {
			return n
		}
	}
	mc.t.Fatalf("no mock node %q", name)
	return nil
}

// byMarker names the node whose marker is id.
func (mc *mockCluster) byMarker(id int64) string {
	for _, n := range mc.nodes {
		if n.marker() == id {
			return n.name
		}
	}
	return fmt.Sprintf("<unknown marker %d>", id)
}

// verify checks ExpectationsWereMet on every mock.
func (mc *mockCluster) verify() {
	mc.t.Helper()
	for _, n := range mc.nodes {
		if err := n.mock.ExpectationsWereMet(); err != nil {
			mc.t.Errorf("mock %s: %v", n.name, err)
		}
	}
}

// busy returns the number of checked-out backend connections per node.
func (mc *mockCluster) busy() map[string]int {
	out := make(map[string]int, len(mc.nodes))
	for _, n := range mc.nodes {
		out[n.name] = n.busy()
	}
	return out
}

// idle is busy() of a cluster that holds no backend connection.
func (mc *mockCluster) idle() map[string]int {
	return mc.busyOnly("", 0)
}

// busyOnly is busy() when only node holds k backend connections.
func (mc *mockCluster) busyOnly(node string, k int) map[string]int {
	out := make(map[string]int, len(mc.nodes))
	for _, n := range mc.nodes {
		out[n.name] = 0
	}
	if node != "" {
		out[node] = k
	}
	return out
}

// dropIdle makes database/sql close mc.db's idle logical connections, as
// it does for those over MaxIdleConns: each releases the backend
// connection it held (see rwshard's conn.Close).
func (mc *mockCluster) dropIdle() {
	mc.db.SetMaxIdleConns(0)
	mc.db.SetMaxIdleConns(2) // database/sql's default again
}

// conn opens a logical connection of mc.db, closed when the test ends if
// not before, and runs stmts on it with ExecContext, requiring each to
// succeed.
func (mc *mockCluster) conn(ctx context.Context, stmts ...string) *sql.Conn {
	mc.t.Helper()
	conn, err := mc.db.Conn(ctx)
	require.NoError(mc.t, err)
	mc.t.Cleanup(func() { _ = conn.Close() })
	for _, q := range stmts {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(mc.t, err, q)
	}
	return conn
}

// prepare prepares q on mc.db, requiring success; the statement is closed
// when the test ends.
func (mc *mockCluster) prepare(ctx context.Context, q string) *sql.Stmt {
	mc.t.Helper()
	st, err := mc.db.PrepareContext(ctx, q)
	require.NoError(mc.t, err)
	mc.t.Cleanup(func() { _ = st.Close() })
	return st
}

// mockQuerier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type mockQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// readNode runs q with QueryContext and returns the node named by its one
// row (see expectRead).
func mockRead(ctx context.Context, qr mockQuerier, q string, args ...any) (string, error) {
	rows, err := qr.QueryContext(ctx, q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", err
		}
		return "", errors.New("no row")
	}
	var name string
	if err := rows.Scan(&name); err != nil {
		return "", err
	}
	return name, rows.Close()
}

// execNode runs q with ExecContext and returns the node that answered (see
// expectWrite).
func (mc *mockCluster) execNode(ctx context.Context, qr mockQuerier, q string, args ...any) (string, error) {
	res, err := qr.ExecContext(ctx, q, args...)
	if err != nil {
		return "", err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return "", err
	}
	return mc.byMarker(id), nil
}

// mockStmt is a statement and how it is sent: with ExecContext when exec,
// else with QueryContext.
type mockStmt struct {
	sql  string
	exec bool
}

// runNode runs q on qr with ExecContext (exec, see execNode) or
// QueryContext (see mockRead) and returns the node that answered.
func (mc *mockCluster) runNode(ctx context.Context, qr mockQuerier, q string, exec bool, args ...any) (string, error) {
	if exec {
		return mc.execNode(ctx, qr, q, args...)
	}
	return mockRead(ctx, qr, q, args...)
}

// ranOn runs q on qr as runNode does and requires that it succeeded on the
// node named want (an answer from another node fails the test, but does
// not stop it).
func (mc *mockCluster) ranOn(ctx context.Context, qr mockQuerier, want, q string, exec bool, args ...any) {
	mc.t.Helper()
	got, err := mc.runNode(ctx, qr, q, exec, args...)
	require.NoError(mc.t, err, q)
	assert.Equal(mc.t, want, got, q)
}

// mockSend runs q on qr with ExecContext (exec) or QueryContext, closing
// any rows, and returns only the error: for a statement that must fail.
func mockSend(ctx context.Context, qr mockQuerier, q string, exec bool) error {
	if exec {
		_, err := qr.ExecContext(ctx, q)
		return err
	}
	rows, err := qr.QueryContext(ctx, q)
	if rows != nil {
		rows.Close()
	}
	return err
}

// mockCtx is context.Background() with apply (a hint) applied, if any:
// the context a table case's ctx field asks for.
func mockCtx(apply func(context.Context) context.Context) context.Context {
	ctx := context.Background()
	if apply != nil {
		ctx = apply(ctx)
	}
	return ctx
}
