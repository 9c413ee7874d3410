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
