package rwshard_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// downConnector is a backend that refuses every connection, like a host
// whose server is gone; err is the dial error it returns, each time.
type downConnector struct {
	err      error
	attempts atomic.Int64
}

func newDownConnector() *downConnector {
	return &downConnector{err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
}

func (d *downConnector) Connect(context.Context) (driver.Conn, error) {
	d.attempts.Add(1)
	return nil, d.err
}
func (d *downConnector) Driver() driver.Driver { return nil }

// flakyConnector is a backend that works (its connections are those of a
// go-sqlmock DB) until down is set, then refuses every connection like
// downConnector (with downErr if set): a primary that was reached and then
// went away.
type flakyConnector struct {
	drv      driver.Driver // go-sqlmock's
	dsn      string
	downErr  error
	down     atomic.Bool
	refusals atomic.Int64 // connects refused while down
}

func (f *flakyConnector) Connect(context.Context) (driver.Conn, error) {
	if f.down.Load() {
		f.refusals.Add(1)
		if f.downErr != nil {
			return nil, f.downErr
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	}
	return f.drv.Open(f.dsn)
}
func (f *flakyConnector) Driver() driver.Driver { return f.drv }

// Without probes, a write to a primary that was reached and then became
// unreachable still ends: it fails with ErrPrimaryUnavailable, keeping the
// cause, once the write pause is over, having tried a bounded number of
// times; reads keep going to the replica.
func TestMockWritePauseWithoutProbes(t *testing.T) {
	const dsn = "rwshard_write_pause_primary"
	pdb, pmock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	require.NoError(t, err)
	defer pdb.Close() // its own connection keeps the DSN registered
	flaky := &flakyConnector{drv: pdb.Driver(), dsn: dsn}
	primary := sql.OpenDB(flaky)
	defer primary.Close()
	replica, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	require.NoError(t, err)
	defer replica.Close()
	db, err := rwshard.OpenDB(primary, []*sql.DB{replica}, func(c *rwshard.Config) {
		c.WritePause = 300 * time.Millisecond
		c.ProbeInterval = 200 * time.Millisecond
	})
	require.NoError(t, err)
	defer db.Close()

	// The primary is reached once; the idle logical connection keeps that
	// backend connection.
	pmock.ExpectExec("UPDATE t SET v = 0").WillReturnResult(sqlmock.NewResult(0, 1))
	_, err = db.Exec("UPDATE t SET v = 0")
	require.NoError(t, err)
	// Then it goes away: the held connection breaks (nothing sent), and
	// every new connection is refused.
	pmock.ExpectExec("UPDATE t SET v = 1").WillReturnError(driver.ErrBadConn)
	flaky.down.Store(true)

	begin := time.Now()
	_, err = db.Exec("UPDATE t SET v = 1")
	took := time.Since(begin)
	require.ErrorIs(t, err, rwshard.ErrPrimaryUnavailable)
	var re *rwshard.RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "primary", re.Node)
	assert.Contains(t, err.Error(), "connection refused", "the cause is kept")
	var oe *net.OpError
	assert.ErrorAs(t, err, &oe, "the cause is wrapped")
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "gave up before the write pause")
	assert.Less(t, took, 2*time.Second, "waited far past the write pause")
	assert.Positive(t, flaky.refusals.Load(), "a new connection was tried")
	// One try, then one per quarter probe interval: not a connect storm.
	// (database/sql itself tries a refused connect up to 3 times.)
	assert.LessOrEqual(t, flaky.refusals.Load(), int64(3*4), "connect attempts: %d", flaky.refusals.Load())
	require.NoError(t, pmock.ExpectationsWereMet())

	mock.ExpectQuery("SELECT v FROM t").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow(1))
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM t").Scan(&v))
	require.NoError(t, mock.ExpectationsWereMet())
}

// A primary that was never reached is waited for like one that went
// away: a write fails after the write pause with ErrPrimaryUnavailable,
// in a RouteError naming the primary, its cause (the dial error) kept;
// connects are paced, not a storm; reads keep going to the replica.
func TestMockNeverReachedPrimaryWaitsWritePause(t *testing.T) {
	down := newDownConnector()
	primary := sql.OpenDB(down)
	defer primary.Close()
	replica, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	require.NoError(t, err)
	defer replica.Close()
	const pause = 500 * time.Millisecond
	db, err := rwshard.OpenDB(primary, []*sql.DB{replica}, func(c *rwshard.Config) {
		c.WritePause = pause
		c.ProbeInterval = 200 * time.Millisecond
	})
	require.NoError(t, err)
	defer db.Close()

	begin := time.Now()
	_, err = db.Exec("UPDATE t SET v = 1")
	took := time.Since(begin)
	require.ErrorIs(t, err, rwshard.ErrPrimaryUnavailable)
	assert.ErrorIs(t, err, down.err, "the cause is kept")
	var re *rwshard.RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "primary", re.Node)
	assert.Equal(t, "write", re.Reason)
	assert.Equal(t, 1, strings.Count(err.Error(), "rwshard:"), "said once: %v", err)
	assert.GreaterOrEqual(t, took, pause, "gave up before the write pause")
	assert.Less(t, took, 4*pause, "waited far past the write pause")
	assert.Positive(t, down.attempts.Load())
	// One try, then one per quarter probe interval: not a connect storm.
	// (database/sql itself tries a refused connect up to 3 times.)
	assert.LessOrEqual(t, down.attempts.Load(), int64(3*4), "connect attempts: %d", down.attempts.Load())

	mock.ExpectQuery("SELECT v FROM t").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow(1))
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM t").Scan(&v))
	require.NoError(t, mock.ExpectationsWereMet())
}

// A server that answers a connect with a refusal (here 1045, access
// denied) is not waited for, even when it was reached before: the write
// fails at once with the server's error itself.
func TestMockRefusedConnectFailsAtOnce(t *testing.T) {
	const dsn = "rwshard_refused_primary"
	pdb, pmock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	require.NoError(t, err)
	defer pdb.Close()
	denied := &mysql.MySQLError{Number: 1045, Message: "Access denied for user 'app'@'10.0.0.1'"}
	flaky := &flakyConnector{drv: pdb.Driver(), dsn: dsn, downErr: denied}
	primary := sql.OpenDB(flaky)
	defer primary.Close()
	replica, _, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	require.NoError(t, err)
	defer replica.Close()
	const pause = 5 * time.Second
	db, err := rwshard.OpenDB(primary, []*sql.DB{replica}, func(c *rwshard.Config) {
		c.WritePause = pause
		c.ProbeInterval = 200 * time.Millisecond
	})
	require.NoError(t, err)
	defer db.Close()

	pmock.ExpectExec("UPDATE t SET v = 0").WillReturnResult(sqlmock.NewResult(0, 1))
	_, err = db.Exec("UPDATE t SET v = 0")
	require.NoError(t, err)
	pmock.ExpectExec("UPDATE t SET v = 1").WillReturnError(driver.ErrBadConn) // the held connection breaks
	flaky.down.Store(true)

	begin := time.Now()
	_, err = db.Exec("UPDATE t SET v = 1")
	took := time.Since(begin)
	assert.True(t, err == error(denied), "want the server's refusal itself, got %T %v", err, err)
	assert.NotErrorIs(t, err, rwshard.ErrPrimaryUnavailable)
	assert.Less(t, took, pause/5, "waited for a server that refused")
	assert.Positive(t, flaky.refusals.Load())
	require.NoError(t, pmock.ExpectationsWereMet())
}

// Session consistency without probes: a session's reads stay on the
// primary for the session window after its write, then return to the
// replicas; other sessions and session-less reads (the connector's own
// scope) are not affected by it; a token carries the session to another
// context. A session-less write is the connector scope's: session-less
// reads stay on the primary for the window after it, while an explicit
// session's reads are not affected.
func TestMockSessionWindow(t *testing.T) {
	const window = 150 * time.Millisecond
	mc := newMockCluster(t, 1, func(c *rwshard.Config) {
		c.Consistency = rwshard.ConsistencySession // OpenDB's default is eventual
		c.SessionWindow = window
		withTokens(c)
	})
	bg := context.Background()
	s := rwshard.WithSession(bg)
	other := rwshard.WithSession(bg)
	assert.True(t, rwshard.SessionFrom(s).LastWrite().IsZero())

	mc.primary().expectWrite("UPDATE t SET v = 2")
	_, err := mc.execNode(s, mc.db, "UPDATE t SET v = 2")
	require.NoError(t, err)
	assert.False(t, rwshard.SessionFrom(s).LastWrite().IsZero())

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
	resumed, err := mc.handOff(s)
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

	// A write without a session: the connector's scope.
	mc.primary().expectWrite("UPDATE t SET v = 4")
	_, err = mc.execNode(bg, mc.db, "UPDATE t SET v = 4")
	require.NoError(t, err)
	mc.primary().expectRead("SELECT v FROM t")
	mc.ranOn(bg, mc.db, "primary", "SELECT v FROM t", false) // a session-less read sees it
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.ranOn(other, mc.db, "replica1", "SELECT v FROM t", false) // another session's scope
	time.Sleep(window + 20*time.Millisecond)
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.ranOn(bg, mc.db, "replica1", "SELECT v FROM t", false) // the window is over
	mc.verify()

	c, err := rwshard.ConnectorOf(bg, mc.db)
	require.NoError(t, err)
	_, err = c.ResumeSession(bg, "not-a-token")
	var ce *rwshard.ConfigError
	assert.ErrorAs(t, err, &ce)
}

// In eventual mode a session's write does not keep its reads off replicas.
func TestMockEventualIgnoresSessions(t *testing.T) {
	mc := newMockCluster(t, 1, func(c *rwshard.Config) { c.Consistency = rwshard.ConsistencyEventual })
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
	mc := newMockCluster(t, 1, func(c *rwshard.Config) { c.Consistency = rwshard.ConsistencySession })
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

// A BEGIN whose connection breaks after it was sent changed nothing: it
// runs again on a fresh connection, with transaction replay on or off,
// and is never reported as a statement of unknown outcome.
func TestMockBrokenBeginRunsAgain(t *testing.T) {
	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprintf("txReplay=%v", replay), func(t *testing.T) {
			mc := newMockCluster(t, 1, func(c *rwshard.Config) {
				c.TxReplay = replay
				c.WritePause = time.Second
			})
			ctx := context.Background()
			p := mc.primary()
			p.mock.ExpectBegin().WillReturnError(mysql.ErrInvalidConn)
			p.mock.ExpectBegin()
			p.expectWrite("UPDATE t SET v = 1")
			p.mock.ExpectCommit()
			tx, err := mc.db.BeginTx(ctx, nil)
			require.NoError(t, err, "BEGIN")
			_, err = tx.ExecContext(ctx, "UPDATE t SET v = 1")
			require.NoError(t, err)
			require.NoError(t, tx.Commit())
			mc.verify()
		})
	}
}
