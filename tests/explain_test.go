package rwshard_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// Explain names every routing reason, without sending anything. Session
// consistency is set explicitly (OpenDB defaults to eventual), so that a
// session's write gives its reads the read-your-writes reason.
func TestMockExplainReasons(t *testing.T) {
	mc := newMockCluster(t, 2, func(c *rwshard.Config) { c.Consistency = rwshard.ConsistencySession })
	bg := context.Background()
	for _, tc := range []struct {
		ctx     context.Context
		sql     string
		reason  string
		targets []string
		kind    string
		hint    string
	}{
		{bg, "SELECT v FROM t", "replica", []string{"replica1", "replica2"}, "read", ""},
		{bg, "UPDATE t SET v = 1", "write", []string{"primary"}, "write", ""},
		{bg, "SELECT v FROM t FOR UPDATE", "locking-read", []string{"primary"}, "locking-read", ""},
		{bg, "SELECT LAST_INSERT_ID()", "session-read", []string{"primary"}, "session-read", ""},
		{bg, "FROBNICATE t", "unknown", []string{"primary"}, "unknown", ""},
		{hint.Primary(bg), "SELECT v FROM t", "hint-primary", []string{"primary"}, "read", "context: primary"},
		{bg, "/* rwshard:node=replica2 */ SELECT v FROM t", "hint-node", []string{"replica2"}, "read", "comment: node=replica2"},
		{hint.MaxLag(bg, time.Second), "SELECT v FROM t", "max-lag", []string{"primary"}, "read", "context: max_lag=1s"},
	} {
		p, err := rwshard.Explain(tc.ctx, mc.db, tc.sql)
		require.NoError(t, err, tc.sql)
		assert.Equal(t, tc.reason, p.Reason, tc.sql)
		assert.Equal(t, tc.targets, p.Targets, tc.sql)
		assert.Equal(t, tc.kind, p.Kind, tc.sql)
		assert.Equal(t, tc.hint, p.Hint, tc.sql)
		assert.Equal(t, tc.sql, p.SQL)
	}

	// read-your-writes: a session that just wrote.
	s := rwshard.WithSession(bg)
	mc.primary().expectWrite("UPDATE t SET v = 2")
	_, err := mc.execNode(s, mc.db, "UPDATE t SET v = 2")
	require.NoError(t, err)
	p, err := rwshard.Explain(s, mc.db, "SELECT v FROM t")
	require.NoError(t, err)
	assert.Equal(t, "read-your-writes", p.Reason)
	assert.Equal(t, []string{"primary"}, p.Targets)
	assert.Contains(t, p.Consistency, "last write")

	// in-transaction and session-pinned, on one connection.
	mc.primary().expectWrite("SET @v = 1")
	conn := mc.conn(bg, "SET @v = 1")
	p, err = rwshard.ExplainConn(bg, conn, "SELECT @v")
	require.NoError(t, err)
	assert.Equal(t, "session-pinned", p.Reason)
	assert.Equal(t, []string{"primary"}, p.Targets)
	p, err = rwshard.ExplainConn(bg, conn, "BEGIN")
	require.NoError(t, err)
	assert.Equal(t, []string{"tx-begin"}, p.Effects)

	mc.primary().expectWrite("BEGIN")
	conn2 := mc.conn(bg, "BEGIN")
	p, err = rwshard.ExplainConn(bg, conn2, "SELECT v FROM t")
	require.NoError(t, err)
	assert.Equal(t, "in-transaction", p.Reason)
	mc.verify()

	// Refusals are errors, as they would be for the statement.
	_, err = rwshard.Explain(bg, mc.db, "/* rwshard:primry */ SELECT 1")
	assert.Error(t, err)
	_, err = rwshard.Explain(hint.Node(bg, "replica1"), mc.db, "DELETE FROM t")
	assert.ErrorIs(t, err, rwshard.ErrWriteToReplica)
	_, err = rwshard.Explain(hint.Node(bg, "nope"), mc.db, "SELECT 1")
	assert.ErrorIs(t, err, rwshard.ErrUnknownNode)
}

// no-healthy-replica: every replica is down (its probe fails), so a read
// falls back to the primary, counted in Stats.
// Explain lists the nodes a read may go to as the balancer sees them: with
// weights, the primary too when its weight is above 0, not when it is 0.
func TestMockExplainWeightedPrimary(t *testing.T) {
	for _, tc := range []struct {
		weight  float64
		targets []string
	}{
		{1, []string{"primary", "replica1", "replica2"}},
		{0, []string{"replica1", "replica2"}},
	} {
		mc := newMockCluster(t, 2, func(c *rwshard.Config) {
			c.Balance, c.Weights = "weighted", map[string]float64{"primary": tc.weight, "replica1": 1, "replica2": 1}
		})
		p, err := rwshard.Explain(context.Background(), mc.db, "SELECT v FROM t")
		require.NoError(t, err)
		assert.Equal(t, "replica", p.Reason)
		assert.Equal(t, tc.targets, p.Targets, "primary weight %v", tc.weight)
	}
}

func TestMockExplainNoHealthyReplica(t *testing.T) {
	primary, pmock, err := sqlmock.New()
	require.NoError(t, err)
	defer primary.Close()
	replica, _, err := sqlmock.New() // expects nothing: its probe fails
	require.NoError(t, err)
	defer replica.Close()
	pmock.MatchExpectationsInOrder(false)
	for range 3 { // the primary's probes, answered enough to look writable
		pmock.ExpectQuery("SELECT @@version").WillReturnRows(sqlmock.NewRows([]string{"v", "h", "p", "s"}).AddRow("10.11.19-MariaDB", "db1", 3306, 1))
		pmock.ExpectQuery("SELECT @@read_only").WillReturnRows(sqlmock.NewRows([]string{"a", "b", "c"}).AddRow(0, "0-1-5", ""))
		pmock.ExpectQuery("SHOW REPLICA STATUS").WillReturnRows(sqlmock.NewRows([]string{"x"}))
	}
	db, err := rwshard.OpenDB(primary, []*sql.DB{replica}, func(c *rwshard.Config) { c.Health = true },
		func(c *rwshard.Config) { c.ProbeInterval = time.Hour })
	require.NoError(t, err)
	defer db.Close()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	require.NoError(t, err)
	require.NoError(t, c.Ready(context.Background()))
	p, err := rwshard.Explain(context.Background(), db, "SELECT v FROM t")
	require.NoError(t, err)
	assert.Equal(t, "no-healthy-replica", p.Reason)
	assert.Equal(t, []string{"primary"}, p.Targets)
	st := c.Stats()
	require.Len(t, st.Nodes, 2)
	assert.True(t, st.Nodes[0].Primary && st.Nodes[0].Up, "%+v", st.Nodes[0])
	assert.False(t, st.Nodes[1].Up, "%+v", st.Nodes[1])
}

// The route log: one line per statement with node and reason; string
// literals and arguments redacted unless LogArgs.
func TestMockRouteLog(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	for _, logArgs := range []bool{false, true} {
		buf.Reset()
		mc := newMockCluster(t, 1, func(c *rwshard.Config) {
			c.RouteLog, c.LogArgs, c.Logger = true, logArgs, logger
		})
		mc.node("replica1").expectRead("SELECT v FROM t WHERE name = 'secret' AND id = ?", 7)
		_, err := mockRead(context.Background(), mc.db, "SELECT v FROM t WHERE name = 'secret' AND id = ?", 7)
		require.NoError(t, err)
		mc.primary().expectWrite("UPDATE t SET v = 1")
		_, err = mc.execNode(context.Background(), mc.db, "UPDATE t SET v = 1")
		require.NoError(t, err)
		mc.verify()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, 2, buf.String())
		assert.Contains(t, lines[0], "node=replica1")
		assert.Contains(t, lines[0], "reason=replica")
		assert.Contains(t, lines[1], "node=primary")
		assert.Contains(t, lines[1], "reason=write")
		if logArgs {
			assert.Contains(t, lines[0], "secret")
			assert.Contains(t, lines[0], "args=[7]")
		} else {
			assert.NotContains(t, lines[0], "secret")
			assert.Contains(t, lines[0], "args=1")
		}
	}
}

// Stats counts statements per reason and node, and the primary's share of
// reads.
func TestMockStats(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	for range 3 {
		mc.node("replica1").expectRead("SELECT v FROM t")
		_, err := mockRead(ctx, mc.db, "SELECT v FROM t")
		require.NoError(t, err)
	}
	mc.primary().expectRead("SELECT v FROM t")
	_, err := mockRead(hint.Primary(ctx), mc.db, "SELECT v FROM t")
	require.NoError(t, err)
	mc.primary().expectWrite("UPDATE t SET v = 1")
	_, err = mc.execNode(ctx, mc.db, "UPDATE t SET v = 1")
	require.NoError(t, err)
	mc.verify()
	c, err := rwshard.ConnectorOf(ctx, mc.db)
	require.NoError(t, err)
	st := c.Stats()
	assert.Equal(t, map[string]uint64{"replica": 3, "hint-primary": 1, "write": 1}, st.Routes)
	assert.Equal(t, uint64(4), st.Reads)
	assert.Equal(t, uint64(1), st.PrimaryReads)
	assert.InDelta(t, 0.25, st.PrimaryReadShare, 1e-9)
	assert.Equal(t, uint64(2), st.Nodes[0].Queries)
	assert.Equal(t, uint64(3), st.Nodes[1].Queries)

	_, err = rwshard.ConnectorOf(ctx, mc.primary().db)
	assert.ErrorContains(t, err, "not an rwshard *sql.DB")
}
