package rwshard_test

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	silentInterval = 250 * time.Millisecond
	silentTimeout  = 200 * time.Millisecond
	silentConnect  = time.Second
)

// silentDB is rwshard over the lab with the given addresses in place of
// the nodes' (proxies), and short health settings.
func silentDB(t *testing.T, l *lab.Lab, addrs []string, params string) (*sql.DB, *eventLog) {
	t.Helper()
	return silentDBAs(t, lab.AppUser, lab.AppPassword, addrs, params)
}

// silentDBAs is silentDB as another user.
func silentDBAs(t *testing.T, user, password string, addrs []string, params string) (*sql.DB, *eventLog) {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s),tcp(%s),tcp(%s)/%s?rwshard.probeInterval=%s&rwshard.probeTimeout=%s&rwshard.connectTimeout=%s%s",
		user, password, addrs[0], addrs[1], addrs[2], lab.AppDatabase, silentInterval, silentTimeout, silentConnect, params)
	cfg, err := rwshard.ParseDSN(dsn)
	require.NoError(t, err)
	log := &eventLog{}
	cfg.Observer = log
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	labtest.WaitReady(t, db)
	return db, log
}

// A replica's network goes silent mid-flight (a proxy in front of it stops
// forwarding bytes and keeps its sockets open, as a firewall that drops
// packets): under 8 readers, no read fails and none waits longer than
// probeInterval + probeTimeout + connectTimeout. Health takes the replica
// out within an interval and its timeout, rwshard closes the connections
// of the reads in flight there, and those reads, which had no rows yet,
// run again on the other replica.
func TestChaosSilentNetwork(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	victim := l.Replicas()[0]
	p := labtest.Proxy(t, victim.Addr())
	db, events := silentDB(t, l, []string{l.Primary().Addr(), p.Addr(), l.Replicas()[1].Addr()}, "&rwshard.consistency=eventual")

	var reads, failures atomic.Int64
	var mu sync.Mutex
	var slowest time.Duration
	var errs []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers(&wg, 8, stop, func() {
		begin := time.Now()
		var x, sid int64
		err := db.QueryRowContext(ctx, "SELECT SLEEP(0.02), @@server_id").Scan(&x, &sid)
		took := time.Since(begin)
		reads.Add(1)
		mu.Lock()
		slowest = max(slowest, took)
		if err != nil {
			failures.Add(1)
			errs = append(errs, err)
		}
		mu.Unlock()
	})
	time.Sleep(time.Second)
	silenced := time.Now()
	p.Silence()
	out := events.waitEvent(t, health.NodeDown, "replica1", silenced, 5*time.Second)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	p.Resume()

	bound := silentInterval + silentTimeout + silentConnect
	t.Logf("replica1 silenced under 8 readers: out %s after; %d reads, %d failed, slowest %s (bound %s)",
		out.Round(time.Millisecond), reads.Load(), failures.Load(), slowest.Round(time.Millisecond), bound)
	assert.Zero(t, failures.Load(), "reads failed: %v", errs)
	assert.LessOrEqual(t, slowest, bound, "a read waited on the silent replica")
}

// The primary's network goes silent under a write in flight: the write
// returns, with ErrOutcomeUnknown (it was sent; it may have run), once
// health takes the primary out, not when the network comes back.
func TestChaosSilentPrimaryWrite(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS silent_w (id INT PRIMARY KEY, v INT)", "REPLACE INTO silent_w VALUES (1, 0)")
	p := labtest.Proxy(t, l.Primary().Addr())
	db, events := silentDB(t, l, []string{p.Addr(), l.Replicas()[0].Addr(), l.Replicas()[1].Addr()}, "&rwshard.writePause=1s")

	done := make(chan error, 1)
	begin := time.Now()
	go func() {
		_, err := db.ExecContext(ctx, "UPDATE silent_w SET v = v + 1 + SLEEP(0.5) WHERE id = 1")
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the UPDATE is on the wire
	silenced := time.Now()
	p.Silence()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the write waited on the silent primary")
	}
	took := time.Since(begin)
	events.waitEvent(t, health.NodeDown, "primary", silenced, 5*time.Second)
	p.Resume()
	t.Logf("write in flight when the primary went silent: %v after %s", err, took.Round(time.Millisecond))
	assert.ErrorIs(t, err, rwshard.ErrOutcomeUnknown)
	var re *rwshard.RouteError
	assert.True(t, errors.As(err, &re) && re.Node == "primary", "%v", err)
	assert.Less(t, took, silentInterval+silentTimeout+time.Second, "bounded by health, not by the network")
}
