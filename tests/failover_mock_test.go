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
	"github.com/rwshard/rwshard/hint"
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

// Session consistency without probes: a session's reads stay on the
// primary for the session window after its write, then return to the
// replicas; other sessions and session-less reads are not affected; a
// token carries the session to another context.
func TestMockSessionWindow(t *testing.T) {
	const window = 150 * time.Millisecond
	mc := newMockCluster(t, 1, rwshard.WithConfig(func(c *rwshard.Config) { c.SessionWindow = window }))
	bg := context.Background()
	s := rwshard.WithSession(bg)
	other := rwshard.WithSession(bg)
	assert.True(t, rwshard.SessionFrom(s).LastWrite().IsZero())

	mc.primary().expectWrite("UPDATE t SET v = 2")
	_, err := mc.execNode(s, mc.db, "UPDATE t SET v = 2")
	require.NoError(t, err)
	assert.False(t, rwshard.SessionFrom(s).LastWrite().IsZero())
	token := rwshard.SessionFrom(s).Token()

	mc.primary().expectRead("SELECT v FROM t")
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.primary().expectRead("SELECT v FROM t")
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{{s, "primary"}, {other, "replica1"}, {bg, "replica1"}} {
		mc.ranOn(tc.ctx, mc.db, tc.want, "SELECT v FROM t", false)
	}
	// Resumed elsewhere from the token: still inside the window.
	resumed, err := rwshard.ResumeSession(bg, token)
	require.NoError(t, err)
	mc.ranOn(resumed, mc.db, "primary", "SELECT v FROM t", false)

	time.Sleep(window + 20*time.Millisecond)
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.ranOn(s, mc.db, "replica1", "SELECT v FROM t", false) // the window is over
	// hint.Replica accepts a replica inside the window.
	mc.primary().expectWrite("UPDATE t SET v = 3")
	_, err = mc.execNode(s, mc.db, "UPDATE t SET v = 3")
	require.NoError(t, err)
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.ranOn(hint.Replica(s), mc.db, "replica1", "SELECT v FROM t", false)
	mc.verify()

	_, err = rwshard.ResumeSession(bg, "not-a-token")
	var ce *rwshard.ConfigError
	assert.ErrorAs(t, err, &ce)
}

// In eventual mode a session's write does not keep its reads off replicas.
func TestMockEventualIgnoresSessions(t *testing.T) {
	mc := newMockCluster(t, 1, rwshard.WithConfig(func(c *rwshard.Config) { c.Consistency = rwshard.ConsistencyEventual }))
	s := rwshard.WithSession(context.Background())
	mc.primary().expectWrite("UPDATE t SET v = 2")
	_, err := mc.execNode(s, mc.db, "UPDATE t SET v = 2")
	require.NoError(t, err)
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.ranOn(s, mc.db, "replica1", "SELECT v FROM t", false)
	mc.verify()
}

// A write inside a transaction counts for the session when it commits,
// not before, and not at all when it rolls back.
func TestMockSessionWriteAtCommit(t *testing.T) {
	mc := newMockCluster(t, 1)
	s := rwshard.WithSession(context.Background())
	p := mc.primary()
	p.mock.ExpectBegin()
	p.expectWrite("UPDATE t SET v = 2")
	p.mock.ExpectRollback()
	tx, err := mc.db.BeginTx(s, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(s, "UPDATE t SET v = 2")
	require.NoError(t, err)
	assert.True(t, rwshard.SessionFrom(s).LastWrite().IsZero(), "counted before commit")
	require.NoError(t, tx.Rollback())
	assert.True(t, rwshard.SessionFrom(s).LastWrite().IsZero(), "a rolled back write counted")

	p.mock.ExpectBegin()
	p.expectWrite("UPDATE t SET v = 3")
	p.mock.ExpectCommit()
	tx, err = mc.db.BeginTx(s, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(s, "UPDATE t SET v = 3")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	assert.False(t, rwshard.SessionFrom(s).LastWrite().IsZero(), "a committed write did not count")
	mc.verify()
}
