package rwshard_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/monitor"
)

// TestLabProbe: one health probe of each node reads its role, replication
// threads and position with one query (one round trip, counted on the
// client's socket) carrying the probe's statements; a heartbeat table is
// read in the same query, missing or not. Over OpenDB handles the
// statements go one by one.
func TestLabProbe(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "DROP TABLE IF EXISTS probe_heartbeat")

	var proxies []*lab.Proxy
	for _, n := range l.Nodes() {
		proxies = append(proxies, labtest.Proxy(t, n.Addr()))
	}
	// probe probes node i of c and checks what it cost: trips exactly (our
	// own connection, through the proxy), and the server's statement
	// counters, which are global: a statement of another client can land
	// in the window, so a mismatch there is measured again, twice at most.
	probe := func(t *testing.T, c *rwshard.Connector, i int, n *lab.Node, want statusDelta, msg string) monitor.Reading {
		t.Helper()
		// The first probe of a node also reads @@version, once.
		_, err := c.Probe(ctx, i)
		require.NoError(t, err, n.Name)
		var r monitor.Reading
		var d statusDelta
		for range 3 {
			before, commands := labtest.NodeStatus(t, n), proxies[i].Commands()
			r, err = c.Probe(ctx, i)
			require.NoError(t, err, n.Name)
			after := labtest.NodeStatus(t, n)
			d = statusDelta{
				trips:     proxies[i].Commands() - commands,
				questions: after["Questions"] - before["Questions"] - 1, // the SHOW GLOBAL STATUS
				selects:   after["Com_select"] - before["Com_select"],
				shows:     after["Com_show_slave_status"] - before["Com_show_slave_status"],
			}
			require.Equal(t, want.trips, d.trips, "%s: round trips: %s", n.Name, msg)
			if d == want {
				break
			}
		}
		assert.Equal(t, want, d, "%s: %s", n.Name, msg)
		return r
	}

	open := func(t *testing.T, params string) *rwshard.Connector {
		cfg, err := rwshard.ParseDSN(labDSN(l, params))
		require.NoError(t, err)
		for i := range cfg.Nodes {
			cfg.Nodes[i].Addr = proxies[i].Addr()
		}
		c, err := rwshard.NewConnector(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}

	t.Run("roles", func(t *testing.T) {
		c := open(t, "rwshard.health=false")
		for i, n := range l.Nodes() {
			r := probe(t, c, i, n, statusDelta{trips: 1, questions: 2, selects: 1, shows: 1}, "one query, a SELECT and SHOW REPLICA STATUS")
			isReplica := n != l.Primary()
			assert.Equal(t, isReplica, r.Replica, n.Name)
			assert.Equal(t, isReplica, r.ReadOnly, n.Name)
			assert.Equal(t, isReplica, r.IORunning && r.SQLRunning, n.Name)
			assert.NotEmpty(t, r.Position.String(), "%s: GTID position", n.Name)
		}
	})

	t.Run("heartbeat", func(t *testing.T) {
		c := open(t, "rwshard.health=false&rwshard.heartbeatTable=app.probe_heartbeat")
		r := probe(t, c, 1, l.Replicas()[0], statusDelta{trips: 1, questions: 3, selects: 2, shows: 1},
			"one query; the last statement fails: no such table")
		assert.True(t, r.Heartbeat.IsZero(), "no table, no heartbeat")
		assert.True(t, r.Replica && r.IORunning && r.SQLRunning, "the statements before it were read")

		beat := time.Date(2026, 11, 30, 7, 0, 0, 123456000, time.UTC)
		setup(t, l, "CREATE TABLE probe_heartbeat (ts VARCHAR(26) NOT NULL, server_id INT UNSIGNED NOT NULL PRIMARY KEY)",
			"INSERT INTO probe_heartbeat VALUES ('"+beat.Format("2006-01-02T15:04:05.000000")+"', 1)")
		r = probe(t, c, 1, l.Replicas()[0], statusDelta{trips: 1, questions: 3, selects: 2, shows: 1}, "one query, two SELECTs and SHOW REPLICA STATUS")
		assert.Equal(t, beat, r.Heartbeat)
		assert.True(t, r.Replica && r.IORunning && r.SQLRunning)
	})

	t.Run("OpenDB", func(t *testing.T) {
		// Over handles the caller opened the statements go one by one.
		handles := make([]*sql.DB, 0, 3)
		for i, n := range l.Nodes() {
			mc, err := mysql.ParseDSN(n.DSN(""))
			require.NoError(t, err)
			mc.Addr = proxies[i].Addr()
			conn, err := mysql.NewConnector(mc)
			require.NoError(t, err)
			h := sql.OpenDB(conn)
			t.Cleanup(func() { h.Close() })
			handles = append(handles, h)
		}
		db, err := rwshard.OpenDB(handles[0], handles[1:])
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)
		r := probe(t, c, 1, l.Replicas()[0], statusDelta{trips: 2, questions: 2, selects: 1, shows: 1}, "two queries")
		assert.True(t, r.Replica && r.ReadOnly && r.IORunning && r.SQLRunning)
	})
}

// statusDelta is what one probe cost a node: round trips (command
// packets), and the server's counts of statements, SELECTs and SHOW
// REPLICA STATUS.
type statusDelta struct{ trips, questions, selects, shows int64 }

// TestLabProbeBusyPool: a node whose pool is exhausted by long statements
// stays up. The probe has a connection of its own; through the node's pool
// it would wait for a connection past its timeout and take the node out.
func TestLabProbeBusyPool(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db, events := chaosDB(t, l, "rwshard.maxOpenConns=1&rwshard.probeInterval=100ms&rwshard.probeTimeout=100ms")
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	victim := l.Replicas()[0].Name
	// Hold replica1's only connection for 2 s, twice over.
	done := make(chan error, 1)
	go func() {
		var err error
		for range 2 {
			var x int
			if err = db.QueryRowContext(hint.Node(ctx, victim), "SELECT SLEEP(1)").Scan(&x); err != nil {
				break
			}
		}
		done <- err
	}()
	waitNode(t, db, victim, time.Now(), 5*time.Second, func(n rwshard.NodeStats) bool { return n.InFlight > 0 })
	samples := 0
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			require.Greater(t, samples, 50)
			_, down := events.first(health.NodeDown, victim, time.Time{})
			assert.False(t, down, "node-down while its pool was busy; events: %v", events.all())
			return
		case <-time.After(10 * time.Millisecond):
		}
		for _, n := range c.Stats().Nodes {
			if n.Name == victim {
				require.True(t, n.Up, "%s out while its pool was busy; events: %v", victim, events.all())
			}
		}
		samples++
	}
}

// TestLabProbeHeldConnection: a node's probes run on one connection held
// from probe to probe, as the GRANT ALL ON app.* user. A connection cut
// since the last probe is replaced before the probe runs, not reported
// as the node failing; so is one closed after that check, found closed
// by the probe's statement (the probe runs again on a new one: without
// that, a close still on its way failed the probe now and then); a network that goes silent during a probe ends it
// at the probe's timeout (its socket closed), and the next probe opens a
// new connection.
func TestLabProbeHeldConnection(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	replica := l.Replicas()[0]
	proxy := labtest.Proxy(t, replica.Addr())
	cfg, err := rwshard.ParseDSN(labtest.PlainDSN(l, "rwshard.health=false"))
	require.NoError(t, err)
	cfg.Nodes[1].Addr = proxy.Addr()
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	probe := func(timeout time.Duration) (monitor.Reading, error) {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		done := make(chan error, 1)
		var r monitor.Reading
		go func() {
			var err error
			r, err = c.Probe(pctx, 1)
			done <- err
		}()
		select {
		case err := <-done:
			return r, err
		case <-time.After(30 * time.Second):
			t.Fatalf("a probe with a %v timeout still running after 30 s", timeout)
			return r, nil
		}
	}

	for range 3 {
		r, err := probe(time.Minute)
		require.NoError(t, err)
		assert.True(t, r.Replica && r.ReadOnly)
	}
	assert.Equal(t, int64(1), proxy.Accepted(), "three probes, one connection")

	proxy.Cut()
	r, err := probe(time.Minute)
	require.NoError(t, err, "a probe after its connection was cut")
	assert.True(t, r.Replica)
	assert.Equal(t, int64(2), proxy.Accepted(), "the cut connection replaced")

	// Closed after the liveness check, found by the probe's statement.
	proxy.CutOnNextCommand()
	r, err = probe(time.Minute)
	require.NoError(t, err, "a probe whose connection closed under its statement")
	assert.True(t, r.Replica)
	assert.Equal(t, int64(3), proxy.Accepted(), "the connection closed under the probe replaced")

	proxy.Silence()
	_, err = probe(300 * time.Millisecond)
	proxy.Resume()
	// Its timeout, said as such: a statement whose error carries it must not
	// be taken for its caller's deadline.
	require.ErrorContains(t, err, "no answer within rwshard.probeTimeout", "a probe on a silent network")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	_, err = probe(time.Minute)
	require.NoError(t, err, "the probe after the network came back")
	assert.Equal(t, int64(4), proxy.Accepted(), "the silenced connection closed, a new one opened")
}
