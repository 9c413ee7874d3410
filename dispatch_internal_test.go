package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/require"
	"github.com/rwshard/rwshard/router"
)

// mayHaveRun tells the errors that prove a statement did not run (the
// server's answer, nothing sent, a refusal before sending) from those
// that leave its outcome unknown; read-your-writes records the latter.
func TestMayHaveRun(t *testing.T) {
	d := router.Decision{Reason: router.ReasonWrite}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"server error", &RouteError{Node: "primary", Err: &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}}, false},
		{"connect failed", &RouteError{Node: "primary", Err: fmt.Errorf("%w: %w", errConnect, io.EOF)}, false},
		{"bad connection", fmt.Errorf("wrapped: %w", driver.ErrBadConn), false},
		{"no primary", &RouteError{Err: fmt.Errorf("%w: %w", ErrPrimaryUnavailable, io.EOF)}, false},
		{"split brain", &RouteError{Err: ErrSplitBrain}, false},
		{"context cancelled", context.Canceled, true},
		{"deadline", context.DeadlineExceeded, true},
		{"invalid connection", mysql.ErrInvalidConn, true},
		{"outcome unknown", outcomeUnknown("primary", d, "INSERT INTO t VALUES (1)", mysql.ErrInvalidConn), true},
		{"interrupted", errors.Join(errInterrupted, io.ErrUnexpectedEOF), true},
	} {
		assert.Equal(t, c.want, mayHaveRun(c.err), "%s: %v", c.name, c.err)
	}
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
		assert.Equal(t, c.wrote, !cn.cl.global.LastWrite().IsZero(), "rows closed with %v: recorded", c.err)
		dc.Close()
		cn.Close()
	}
}
