package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/router"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// judge puts every error in exactly one class, and read-your-writes,
// retries and the errors the caller gets read it: the errors that prove a
// statement did not run (nothing sent, a refusal, the server's answer)
// apart from those that leave its outcome unknown.
func TestJudge(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want outcome
	}{
		{"nil", live, nil, ranOK},
		{"server error", live, &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, serverError},
		{"server error, wrapped", live, &RouteError{Node: "primary", Err: &mysql.MySQLError{Number: 1146}}, serverError},
		{"read-only", live, &mysql.MySQLError{Number: 1290}, refused},
		{"read-only mode", live, &mysql.MySQLError{Number: 1836}, refused},
		{"access denied", live, &mysql.MySQLError{Number: 1045}, refused},
		{"wsrep not ready", live, &mysql.MySQLError{Number: 1047}, refused},
		{"connect failed", live, connectErr(io.EOF), notSent},
		{"connect failed, caller gone", ended, connectErr(context.Canceled), notSent},
		{"bad connection", live, fmt.Errorf("wrapped: %w", driver.ErrBadConn), notSent},
		{"retries exhausted", live, ErrBrokenConnection, notSent},
		{"pool closed", live, errPoolClosed, notSent},
		{"caller's context", ended, context.Canceled, canceled},
		{"server error, caller gone", ended, &mysql.MySQLError{Number: 1317}, canceled},
		{"a driver's own deadline", live, context.DeadlineExceeded, broke},
		{"invalid connection", live, mysql.ErrInvalidConn, broke},
		{"eof", live, io.ErrUnexpectedEOF, broke},
		{"interrupted", live, errors.Join(errInterrupted, io.ErrUnexpectedEOF), broke},
		{"outcome unknown", live, outcomeUnknown(nil, router.ReasonWrite, "INSERT INTO t VALUES (1)", mysql.ErrInvalidConn), broke},
	} {
		assert.Equal(t, c.want, judge(c.ctx, c.err), "%s: %v", c.name, c.err)
	}
	assert.True(t, broke.mayHaveRun() && canceled.mayHaveRun())
	assert.False(t, notSent.mayHaveRun() || refused.mayHaveRun() || serverError.mayHaveRun())
}

// Each fact once: a RouteError made from another names the node, reason
// and statement once, and the causes stay reachable.
func TestRouteErrorSaysItOnce(t *testing.T) {
	n := &node{name: "primary"}
	inner := routeErr(n, router.ReasonWrite, "INSERT INTO t VALUES (1)", connectErr(io.EOF))
	c := &conn{cl: &cluster{cfg: &Config{WritePause: time.Second}, probing: true}}
	err := (&exe{c: c, q: "INSERT INTO t VALUES (1)"}).unavailable(n, router.ReasonWrite, inner)
	msg := err.Error()
	assert.Equal(t, 1, strings.Count(msg, "rwshard:"), msg)
	assert.Equal(t, 1, strings.Count(msg, "node primary"), msg)
	assert.Equal(t, 1, strings.Count(msg, "(route: write)"), msg)
	assert.Equal(t, 1, strings.Count(msg, "INSERT"), msg)
	assert.ErrorIs(t, err, ErrPrimaryUnavailable)
	assert.ErrorIs(t, err, errConnect)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, `rwshard: node primary: primary unavailable after waiting 1s: cannot connect: EOF (route: write) in "INSERT INTO t VALUES (1)"`, msg)
}

// brokenRowsBackend answers every query with a row whose rows' Close
// fails with err: go-sql-driver's ErrInvalidConn when the connection broke
// before their end, a server error when the statement failed there.
type brokenRowsBackend struct {
	instantBackend
	err error
}

func (be *brokenRowsBackend) Connect(context.Context) (driver.Conn, error) {
	return &brokenRowsConn{instantBackendConn{be: &be.instantBackend}, be.err}, nil
}

type brokenRowsConn struct {
	instantBackendConn
	err error
}

func (c *brokenRowsConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	return brokenRows{&instantBackendRows{text: q}, c.err}, nil
}

type brokenRows struct {
	*instantBackendRows
	err error
}

func (r brokenRows) Close() error { return r.err }

// The rows of a write in autocommit (INSERT … RETURNING) whose connection
// breaks before their end: the write may have committed, and the scope
// records it (a write of unknown outcome). Rows that end in a server's
// error (the statement failed, and was rolled back) record nothing.
func TestWriteRowsBrokenRecorded(t *testing.T) {
	for _, c := range []struct {
		err   error
		wrote bool
	}{
		{mysql.ErrInvalidConn, true},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
	} {
		cn := instantConnector(t, &brokenRowsBackend{err: c.err}, 0, "")
		ctx := context.Background()
		dc, err := cn.Connect(ctx)
		require.NoError(t, err)
		rows, err := dc.(*conn).QueryContext(ctx, "INSERT INTO t (a) VALUES (1) RETURNING id", nil)
		require.NoError(t, err)
		require.NoError(t, rows.Next(make([]driver.Value, len(rows.Columns()))))
		assert.ErrorIs(t, rows.Close(), c.err)
		assert.Equal(t, c.wrote, !cn.cl.global.Load().LastWrite().IsZero(), "rows closed with %v: recorded", c.err)
		dc.Close()
		cn.Close()
	}
}
