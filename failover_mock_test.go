package rwshard_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// downConnector is a backend that refuses every connection, like a host
// whose server is gone.
type downConnector struct{ attempts atomic.Int64 }

func (d *downConnector) Connect(context.Context) (driver.Conn, error) {
	d.attempts.Add(1)
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
}
func (d *downConnector) Driver() driver.Driver { return nil }

// Without probes, a write to an unreachable primary still ends: it fails
// with ErrPrimaryUnavailable once the write pause is over, having tried
// a bounded number of times; reads keep going to the replica.
func TestMockWritePauseWithoutProbes(t *testing.T) {
	down := &downConnector{}
	primary := sql.OpenDB(down)
	defer primary.Close()
	replica, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	require.NoError(t, err)
	defer replica.Close()
	db, err := rwshard.OpenDB(primary, []*sql.DB{replica}, rwshard.WithConfig(func(c *rwshard.Config) {
		c.WritePause = 300 * time.Millisecond
		c.ProbeInterval = 200 * time.Millisecond
	}))
	require.NoError(t, err)
	defer db.Close()

	begin := time.Now()
	_, err = db.Exec("UPDATE t SET v = 1")
	took := time.Since(begin)
	require.ErrorIs(t, err, rwshard.ErrPrimaryUnavailable)
	var re *rwshard.RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "primary", re.Node)
	assert.Contains(t, err.Error(), "connection refused", "the cause is kept")
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "gave up before the write pause")
	assert.Less(t, took, 2*time.Second, "waited far past the write pause")
	// One try, then one per quarter probe interval: not a connect storm.
	// (database/sql itself tries a refused connect up to 3 times.)
	assert.LessOrEqual(t, down.attempts.Load(), int64(3*4), "connect attempts: %d", down.attempts.Load())

	mock.ExpectQuery("SELECT v FROM t").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow(1))
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM t").Scan(&v))
	require.NoError(t, mock.ExpectationsWereMet())
}
