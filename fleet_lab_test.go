package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// lowMaxConnections sets n's max_connections to what it has in use now
// plus room (exact, when given), restored when the test ends,
// and returns it.
func lowMaxConnections(t *testing.T, n *lab.Node, room int, exact ...int) int {
	t.Helper()
	ctx := labtest.Ctx(t, 10*time.Second)
	var old int
	require.NoError(t, n.Admin().QueryRowContext(ctx, "SELECT @@max_connections").Scan(&old))
	lim := int(statusCounter(t, n, "Threads_connected")) + room
	if len(exact) > 0 && exact[0] > 0 {
		lim = exact[0]
	}
	limit := lim
	require.NoError(t, n.Exec(ctx, "SET GLOBAL max_connections = "+strconv.Itoa(limit)))
	t.Cleanup(func() {
		require.NoError(t, n.Exec(context.Background(), "SET GLOBAL max_connections = "+strconv.Itoa(old)))
	})
	return limit
}

// fleetLoad runs writers goroutines on each db for d, each a loop of
// statements on the primary, and counts what they saw.
type fleetLoad struct {
	ok, budget, tooMany, other atomic.Int64
	firstOther                 atomic.Value
}

func (f *fleetLoad) run(ctx context.Context, dbs []*sql.DB, writers int, d time.Duration, q string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for _, db := range dbs {
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					_, err := db.ExecContext(ctx, q)
					var me *mysql.MySQLError
					switch {
					case err == nil:
						f.ok.Add(1)
					case errors.As(err, &me) && me.Number == 1040:
						f.tooMany.Add(1)
					case ctx.Err() != nil: // the run's end
					case errors.Is(err, rwshard.ErrConnBudget):
						f.budget.Add(1)
					default:
						f.other.Add(1)
						f.firstOther.CompareAndSwap(nil, err.Error())
					}
				}
			}()
		}
	}
	wg.Wait()
}

// TestLabConnBudget: a fleet of connectors whose configured pools
// (fleetSize × maxOpenConns) far exceed the server's max_connections
// never makes the server refuse a connection (1040) under load: each
// caps its pool at its share, and a statement that finds the share used
// up waits, then fails with ErrConnBudget naming the node and the limit.
// Scaled for CI; RWSHARD_FLEET_FULL=1 runs the fleet: 30
// connectors with pools of 50 against max_connections=300.
func TestLabConnBudget(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	p := l.Primary()
	fleet, perProcess, writers, maxConns := 6, 40, 40, lowMaxConnections(t, p, 60)
	if os.Getenv("RWSHARD_FLEET_FULL") == "1" {
		fleet, perProcess, writers, maxConns = 30, 50, 50, lowMaxConnections(t, p, 0, 300)
	}
	refusedBefore := statusCounter(t, p, "Connection_errors_max_connections")

	var dbs []*sql.DB
	for range fleet {
		dbs = append(dbs, openLab(t, l, fmt.Sprintf("rwshard.fleetSize=%d&rwshard.maxOpenConns=%d&rwshard.connWait=100ms", fleet, perProcess)))
	}
	var load fleetLoad
	load.run(ctx, dbs, writers, 3*time.Second, "/* rwshard:primary */ SELECT SLEEP(0.05)")

	share := (maxConns-maxConns/10)/fleet - 1 // less the connector's probe connection
	for i, db := range dbs {
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)
		pool := c.Stats().Nodes[0].Pool
		assert.Equal(t, share, pool.MaxOpenConnections, "connector %d: the limit is its share", i)
		assert.LessOrEqual(t, pool.OpenConnections, share, "connector %d", i)
	}
	t.Logf("max_connections=%d share=%d: ok=%d budget=%d 1040=%d other=%d", maxConns, share,
		load.ok.Load(), load.budget.Load(), load.tooMany.Load(), load.other.Load())
	assert.Zero(t, load.tooMany.Load(), "errors 1040 reached the application")
	assert.Zero(t, statusCounter(t, p, "Connection_errors_max_connections")-refusedBefore, "the server refused connections as full")
	assert.Zero(t, load.other.Load(), "other errors: %v", load.firstOther.Load())
	assert.Positive(t, load.ok.Load())
	assert.Positive(t, load.budget.Load(), "%d writers on %d connections never waited past connWait", writers, share)

	// The typed error names the node and the limit. The other connectors
	// close first: a look at the server while they still held their
	// connections can leave dbs[0] a smaller limit for a few seconds
	// (budgetFresh), and a BEGIN at it waits out connWait.
	for _, db := range dbs[1:] {
		require.NoError(t, db.Close())
	}
	var held []*sql.Tx
	for range share {
		var tx *sql.Tx
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if tx, err = dbs[0].BeginTx(ctx, nil); !errors.Is(err, rwshard.ErrConnBudget) || time.Now().After(deadline) {
				break
			}
		}
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.NoError(t, err)
		held = append(held, tx)
	}
	_, err := dbs[0].ExecContext(ctx, "/* rwshard:primary */ SELECT 1")
	require.ErrorIs(t, err, rwshard.ErrConnBudget)
	t.Log(err)
	assert.ErrorContains(t, err, "connections to primary")
	assert.ErrorContains(t, err, fmt.Sprintf("limit of %d connections", share))
	assert.ErrorContains(t, err, fmt.Sprintf("rwshard.fleetSize=%d", fleet))
	assert.ErrorContains(t, err, "rwshard.connWait (100ms)")
	for _, tx := range held {
		require.NoError(t, tx.Rollback())
	}
}

// TestLabLongHold: a result set left open, and a transaction left open,
// past rwshard.holdWarn raise one long-hold event each, naming the
// statement that began the hold and the caller's file:line, and are
// counted in Stats.LongHolds while they last; their times go to
// Stats.HoldTimes. With rwshard.holdLimit the hold is ended: the next row
// or statement gets ErrHoldLimit.
func TestLabLongHold(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	const cursor = "SELECT seq, REPEAT('x', 100) FROM seq_1_to_10000"

	longHolds := func(c *rwshard.Connector) int64 { return c.Stats().LongHolds }
	t.Run("warn", func(t *testing.T) {
		db, events := chaosDB(t, l, "rwshard.holdWarn=1s")
		labtest.WaitReady(t, db)
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)

		rows, err := db.QueryContext(ctx, cursor) // the cursor's line
		_, _, line, _ := runtime.Caller(0)
		require.NoError(t, err)
		require.True(t, rows.Next())
		require.Eventually(t, func() bool { return longHolds(c) == 1 }, 5*time.Second, 20*time.Millisecond, "the gauge")
		time.Sleep(time.Second) // held 2 s in all, past the bound twice over
		assert.Equal(t, int64(1), longHolds(c))
		require.NoError(t, rows.Close())
		assert.Zero(t, longHolds(c), "the gauge after Close")

		var holds []health.Event
		for _, e := range events.all() {
			if e.Kind == health.LongHold {
				holds = append(holds, e)
			}
		}
		require.Len(t, holds, 1, "one event for one hold")
		assert.Contains(t, holds[0].Detail, "a result set held a connection for")
		assert.Contains(t, holds[0].Detail, `begun by "SELECT seq, REPEAT('?', 100) FROM seq_1_to_10000" at `, "the statement, redacted")
		assert.Contains(t, holds[0].Detail, fmt.Sprintf("fleet_lab_test.go:%d", line-1))
		h := c.Stats().HoldTimes
		assert.Positive(t, h.Count)
		assert.GreaterOrEqual(t, h.Sum, 2*time.Second, "the held cursor's time")

		tx, err := db.BeginTx(ctx, nil) // the transaction's line
		_, _, line, _ = runtime.Caller(0)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return longHolds(c) == 1 }, 5*time.Second, 20*time.Millisecond, "the gauge")
		require.NoError(t, tx.Commit())
		assert.Zero(t, longHolds(c))
		e, ok := events.first(health.LongHold, "primary", time.Time{})
		require.True(t, ok, "%v", events.all())
		assert.Contains(t, e.Detail, "a transaction held a connection for")
		assert.Contains(t, e.Detail, `begun by "BEGIN" at `)
		assert.Contains(t, e.Detail, fmt.Sprintf("fleet_lab_test.go:%d", line-1))
	})

	t.Run("limit", func(t *testing.T) {
		db, events := chaosDB(t, l, "rwshard.holdLimit=1s")
		labtest.WaitReady(t, db)
		rows, err := db.QueryContext(ctx, cursor)
		require.NoError(t, err)
		require.True(t, rows.Next())
		require.Eventually(t, func() bool { return events.count(health.LongHold) == 1 }, 5*time.Second, 20*time.Millisecond)
		for rows.Next() {
		}
		require.ErrorIs(t, rows.Err(), rwshard.ErrHoldLimit)
		rows.Close()

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return events.count(health.LongHold) == 2 }, 5*time.Second, 20*time.Millisecond)
		_, err = tx.ExecContext(ctx, "DO 1")
		require.ErrorIs(t, err, rwshard.ErrHoldLimit)
		require.ErrorIs(t, tx.Commit(), rwshard.ErrHoldLimit)
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT 1").Scan(&n), "the pool goes on")
	})
}

// stormRun is what one kill and restart of the primary under a fleet's
// writes cost.
type stormRun struct {
	dials                  int64         // dial attempts to the primary from the kill to the end
	peak, p99              float64       // new connections per second to the primary after its return (100 ms windows)
	backFull               time.Duration // from its return to a 100 ms window at 80 % of the throughput before the kill
	writes, failed, ranOut int64         // writes acknowledged after the kill, failed, ErrConnBudget
	retries                int64         // statements retried by the fleet (Stats.Retries)
}

// TestLabReconnectStorm: a fleet of connectors writing to the primary
// when it is killed and restarted. With the slow start of dials, the
// primary sees fewer new connections per second after its restart than
// without; the fleet still comes back to full throughput. The figures are
// logged for docs/connections.md.
func TestLabReconnectStorm(t *testing.T) {
	l := labtest.Fresh(t, lab.Options{Shards: 1, Replicas: 1})
	ctx := labtest.Ctx(t, 3*time.Minute)
	setup(t, l, "CREATE TABLE storm (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	const fleet, writers = 6, 16
	primary := l.Primary()

	run := func(ramp bool) stormRun {
		var r stormRun
		var dials atomic.Int64
		var counting atomic.Bool
		var connMu sync.Mutex
		var connected []time.Duration // since start: connections the primary accepted after the kill
		start := time.Now()
		var dbs []*sql.DB
		for range fleet {
			cfg, err := rwshard.ParseDSN(labDSN(l, "rwshard.maxOpenConns=16&rwshard.probeInterval=250ms&rwshard.writePause=30s&rwshard.connectTimeout=1s"))
			require.NoError(t, err)
			cfg.Backend.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if counting.Load() && addr == primary.Addr() {
					dials.Add(1)
				}
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				if err == nil && counting.Load() && addr == primary.Addr() {
					connMu.Lock()
					connected = append(connected, time.Since(start))
					connMu.Unlock()
				}
				return c, err
			}
			c, err := rwshard.NewConnector(cfg)
			require.NoError(t, err)
			rwshard.SetDialRamp(c, ramp)
			db := sql.OpenDB(c)
			t.Cleanup(func() { db.Close() })
			labtest.WaitReady(t, db)
			dbs = append(dbs, db)
		}
		// Writes acknowledged, per 10 ms tick since start.
		ticks := make([]atomic.Int64, 6000)
		var failed, ranOut atomic.Int64
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, db := range dbs {
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for wctx.Err() == nil {
						_, err := db.ExecContext(wctx, "INSERT INTO storm (v) VALUES (SLEEP(0.05))")
						switch {
						case err == nil:
							if i := int(time.Since(start) / (10 * time.Millisecond)); i < len(ticks) {
								ticks[i].Add(1)
							}
						case wctx.Err() != nil:
						case errors.Is(err, rwshard.ErrConnBudget):
							ranOut.Add(1)
						default:
							failed.Add(1)
						}
					}
				}()
			}
		}
		rate := func(from, to time.Duration) float64 { // writes a second in [from, to) since start
			n := int64(0)
			for i := int(from / (10 * time.Millisecond)); i < int(to/(10*time.Millisecond)); i++ {
				n += ticks[i].Load()
			}
			return float64(n) / (to - from).Seconds()
		}
		time.Sleep(2 * time.Second)
		before := rate(time.Second, 2*time.Second)
		counting.Store(true)
		killed := time.Since(start)
		require.NoError(t, l.Kill(primary))
		time.Sleep(2 * time.Second)
		require.NoError(t, l.Restart(ctx, primary))
		time.Sleep(5 * time.Second)
		stop()
		wg.Wait()
		connMu.Lock()
		require.NotEmpty(t, connected, "no connection to the primary after the kill")
		restarted := connected[0] // the fleet's first connection to the returned primary
		// New connections per 100 ms window from there, as a rate.
		perSec := make([]float64, 50)
		for _, at := range connected {
			if i := int((at - restarted) / (100 * time.Millisecond)); i < len(perSec) {
				perSec[i] += 10
			}
		}
		connMu.Unlock()
		for i := restarted; i+100*time.Millisecond <= restarted+5*time.Second; i += 10 * time.Millisecond {
			if rate(i, i+100*time.Millisecond) >= 0.8*before {
				r.backFull = i - restarted
				break
			}
		}
		slices.Sort(perSec)
		r.peak, r.p99 = perSec[len(perSec)-1], perSec[int(float64(len(perSec)-1)*0.99)]
		r.dials = dials.Load()
		r.writes = int64(rate(killed, restarted+5*time.Second) * (restarted + 5*time.Second - killed).Seconds())
		r.failed, r.ranOut = failed.Load(), ranOut.Load()
		for _, db := range dbs {
			c, err := rwshard.ConnectorOf(ctx, db)
			require.NoError(t, err)
			s := c.Stats()
			r.retries += int64(s.Retries)
			db.Close()
		}
		t.Logf("ramp %v: %.0f writes/s before the kill; dials to the primary from the kill %d; new connections/s after the restart: peak %.0f, p99 %.0f; back to 80 %% throughput %v after the restart; writes %d (%.4f dials and %.4f retries per write), failed %d (in flight at the kill), ErrConnBudget %d",
			ramp, before, r.dials, r.peak, r.p99, r.backFull, r.writes, float64(r.dials)/float64(r.writes), float64(r.retries)/float64(r.writes), r.failed, r.ranOut)
		require.Positive(t, r.backFull, "the fleet never came back to full throughput")
		assert.LessOrEqual(t, r.failed, int64(fleet*writers), "more writes failed than were in flight at the kill")
		return r
	}
	// The first restart of a fresh lab's server is slower than the next
	// ones: one unmeasured, so that both runs meet the same server.
	require.NoError(t, l.Kill(primary))
	require.NoError(t, l.Restart(ctx, primary))
	require.NoError(t, l.Sync(ctx, 30*time.Second))
	on := run(true)
	require.NoError(t, l.Sync(ctx, 30*time.Second))
	off := run(false)
	assert.Less(t, on.peak, off.peak, "the slow start did not lower the peak of new connections")
}

// TestLabConnBudgetServerFull: a server filled by someone else's
// connections refuses rwshard's dial (1040): the statement does not get
// the refusal but waits, then fails with ErrConnBudget; once the server
// has room again (and the pool's look at it is stale), statements run.
func TestLabConnBudgetServerFull(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	p := l.Primary()
	lowMaxConnections(t, p, 5)

	// Fill the server, as a user without the extra connection for SUPER.
	filler, err := sql.Open("mysql", p.UserDSN(lab.PlainUser, lab.PlainPassword, ""))
	require.NoError(t, err)
	t.Cleanup(func() { filler.Close() })
	var fill []*sql.Conn
	for {
		conn, err := filler.Conn(ctx)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1040 {
			break
		}
		require.NoError(t, err)
		require.NoError(t, conn.PingContext(ctx))
		fill = append(fill, conn)
		require.Less(t, len(fill), 50, "the server never filled up")
	}

	// One host: no probe, the pool learns the server is full by dialing.
	db, err := sql.Open(rwshard.DriverName, fmt.Sprintf("%s:%s@tcp(%s)/%s?rwshard.connWait=300ms",
		lab.PlainUser, lab.PlainPassword, p.Addr(), lab.AppDatabase))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.ExecContext(ctx, "DO 1")
	require.ErrorIs(t, err, rwshard.ErrConnBudget)
	var me *mysql.MySQLError
	assert.False(t, errors.As(err, &me), "the server's refusal reached the caller: %v", err)
	assert.ErrorContains(t, err, "the server was full: it refused a connection (1040)")

	for _, conn := range fill {
		require.NoError(t, conn.Close())
	}
	filler.Close()
	require.Eventually(t, func() bool {
		_, err := db.ExecContext(ctx, "DO 1")
		return err == nil
	}, 15*time.Second, 100*time.Millisecond, "statements never ran again")
}
