package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// fakeConn is a driver connection that counts what the pool does to it.
type fakeConn struct {
	nopConn
	id      int
	resets  atomic.Int32
	closed  atomic.Bool
	invalid atomic.Bool
	badNext atomic.Bool // the next ResetSession reports driver.ErrBadConn
	wait    time.Duration
}

func (c *fakeConn) serverWaitTimeout() time.Duration  { return c.wait }
func (c *fakeConn) idleSince(now time.Time) time.Time { return now }

func (c *fakeConn) Close() error { c.closed.Store(true); return nil }
func (c *fakeConn) IsValid() bool {
	return !c.invalid.Load()
}
func (c *fakeConn) ResetSession(context.Context) error {
	c.resets.Add(1)
	if c.badNext.Swap(false) {
		return driver.ErrBadConn
	}
	return nil
}

type fakeConnector struct {
	mu    sync.Mutex
	conns []*fakeConn
	err   error
	wait  time.Duration // the wait_timeout its connections report
}

func (f *fakeConnector) Connect(context.Context) (driver.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	c := &fakeConn{id: len(f.conns), wait: f.wait}
	f.conns = append(f.conns, c)
	return c, nil
}
func (f *fakeConnector) Driver() driver.Driver { return nil }

func (f *fakeConnector) opened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

func mustGet(t *testing.T, p *connPool) *poolConn {
	t.Helper()
	pc, err := p.get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

func TestConnPoolReusesNewestAndResets(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 0, 2, 0, 0)
	defer p.close()
	a, b := mustGet(t, p), mustGet(t, p)
	if a.dc.(*fakeConn).resets.Load() != 0 {
		t.Fatal("a new connection was reset")
	}
	p.put(a, false)
	p.put(b, false)
	c := mustGet(t, p)
	if c != b {
		t.Fatalf("got connection %d, want the newest idle one (%d)", c.dc.(*fakeConn).id, b.dc.(*fakeConn).id)
	}
	if n := b.dc.(*fakeConn).resets.Load(); n != 1 {
		t.Fatalf("reused connection reset %d times, want 1", n)
	}
	if fc.opened() != 2 {
		t.Fatalf("opened %d connections, want 2", fc.opened())
	}
	if s := p.stats(); s.OpenConnections != 2 || s.InUse != 1 || s.Idle != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConnPoolDiscardsBadConnections(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 0, 4, 0, 0)
	defer p.close()
	a, b, c := mustGet(t, p), mustGet(t, p), mustGet(t, p)
	a.dc.(*fakeConn).badNext.Store(true) // closed by the server while idle
	b.dc.(*fakeConn).invalid.Store(true) // broke while in use
	p.put(a, false)
	p.put(b, false)
	p.put(c, true) // the caller saw driver.ErrBadConn
	if !b.dc.(*fakeConn).closed.Load() || !c.dc.(*fakeConn).closed.Load() {
		t.Fatal("an invalid or discarded connection was kept")
	}
	d := mustGet(t, p) // a fails its reset: closed, and a new one opened
	if d == a || !a.dc.(*fakeConn).closed.Load() {
		t.Fatal("a connection that failed its reset was handed out or kept open")
	}
	if s := p.stats(); s.OpenConnections != 1 || s.Idle != 0 {
		t.Fatalf("stats %+v, want one open connection", s)
	}
}

func TestConnPoolCapAndWaiters(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 1, 1, 0, 0)
	defer p.close()
	a := mustGet(t, p)
	// A waiter whose context ends leaves the queue with its error.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.get(ctx, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get at the cap: %v, want the context's deadline", err)
	}
	got := make(chan *poolConn)
	go func() {
		pc, err := p.get(context.Background(), "")
		if err != nil {
			t.Error(err)
		}
		got <- pc
	}()
	for p.stats().WaitCount < 2 {
		time.Sleep(time.Millisecond)
	}
	p.put(a, false)
	if pc := <-got; pc != a {
		t.Fatal("the waiter did not get the returned connection")
	}
	if fc.opened() != 1 {
		t.Fatalf("opened %d connections over a cap of 1", fc.opened())
	}
	// A discarded connection frees its slot for the next waiter, who
	// opens a new one.
	go func() {
		pc, err := p.get(context.Background(), "")
		if err != nil {
			t.Error(err)
		}
		got <- pc
	}()
	for p.stats().WaitCount < 3 {
		time.Sleep(time.Millisecond)
	}
	p.put(a, true)
	if pc := <-got; pc == a || pc == nil {
		t.Fatal("the waiter did not get a new connection")
	}
	if s := p.stats(); s.OpenConnections != 1 || s.WaitDuration <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConnPoolConnectErrorFreesSlot(t *testing.T) {
	fc := &fakeConnector{err: errors.New("refused")}
	p := newConnPool(fc, 1, 1, 0, 0)
	defer p.close()
	for range 3 {
		if _, err := p.get(context.Background(), ""); err == nil || err.Error() != "refused" {
			t.Fatalf("get: %v, want the connector's error", err)
		}
	}
	fc.mu.Lock()
	fc.err = nil
	fc.mu.Unlock()
	mustGet(t, p)
}

func TestConnPoolLimits(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 0, 1, 0, 0)
	a, b := mustGet(t, p), mustGet(t, p)
	p.put(a, false)
	p.put(b, false) // over MaxIdleConns: closed
	if !b.dc.(*fakeConn).closed.Load() || a.dc.(*fakeConn).closed.Load() {
		t.Fatal("the idle cap closed the wrong connection")
	}
	if s := p.stats(); s.MaxIdleClosed != 1 || s.Idle != 1 {
		t.Fatalf("stats %+v", s)
	}
	c := mustGet(t, p)
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.get(context.Background(), ""); !errors.Is(err, errPoolClosed) {
		t.Fatalf("get after close: %v", err)
	}
	p.put(c, false) // checked out across close: closed on return
	if !c.dc.(*fakeConn).closed.Load() || p.stats().OpenConnections != 0 {
		t.Fatalf("after close: %+v", p.stats())
	}
}

func TestConnPoolLifetime(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 0, 2, 10*time.Millisecond, 0)
	defer p.close()
	a := mustGet(t, p)
	p.put(a, false)
	time.Sleep(15 * time.Millisecond)
	b := mustGet(t, p) // a expired while idle
	if b == a || !a.dc.(*fakeConn).closed.Load() {
		t.Fatal("an expired idle connection was reused")
	}
	time.Sleep(15 * time.Millisecond)
	p.put(b, false) // expired while in use: closed on return
	if !b.dc.(*fakeConn).closed.Load() {
		t.Fatal("an expired connection went back to the pool")
	}
	if s := p.stats(); s.MaxLifetimeClosed != 2 || s.OpenConnections != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConnPoolCleanerClosesIdle(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 0, 2, 0, time.Millisecond)
	defer p.close()
	a := mustGet(t, p)
	p.put(a, false)
	deadline := time.Now().Add(5 * time.Second)
	for !a.dc.(*fakeConn).closed.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the cleaner did not close a connection past ConnMaxIdleTime")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := p.stats(); s.MaxIdleTimeClosed != 1 || s.OpenConnections != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConnPoolCloseEndsWaits(t *testing.T) {
	p := newConnPool(&fakeConnector{}, 1, 1, 0, 0)
	mustGet(t, p)
	errc := make(chan error)
	go func() {
		_, err := p.get(context.Background(), "")
		errc <- err
	}()
	for p.stats().WaitCount < 1 {
		time.Sleep(time.Millisecond)
	}
	p.close()
	if err := <-errc; !errors.Is(err, errPoolClosed) {
		t.Fatalf("a wait across close: %v", err)
	}
}

// Many goroutines over a small cap: never more connections open than the
// cap, and every checkout served (run with -race).
func TestConnPoolConcurrent(t *testing.T) {
	fc := &fakeConnector{}
	p := newConnPool(fc, 3, 2, 0, 0)
	defer p.close()
	var inUse, peak atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				ctx := context.Background()
				if i%7 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Microsecond)
					defer cancel()
				}
				pc, err := p.get(ctx, "")
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Error(err)
					}
					continue
				}
				n := inUse.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				inUse.Add(-1)
				p.put(pc, (g+i)%11 == 0)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 3 {
		t.Fatalf("%d connections in use at once over a cap of 3", peak.Load())
	}
	if s := p.stats(); s.OpenConnections > 3 || s.InUse != 0 {
		t.Fatalf("stats after the run %+v", s)
	}
}

// Of the idle connections, get takes one whose session variables are the
// ones wanted, so that logical connections with different settings reading
// in turn do not set and restore a connection at every switch; without
// one, the most recently returned.
func TestConnPoolAffinity(t *testing.T) {
	conns := []*backendConn{
		newBackendConn(&fakeConn{id: 0}, nil),
		newBackendConn(&fakeConn{id: 1}, nil),
		newBackendConn(&fakeConn{id: 2}, nil),
	}
	conns[0].vars.key = "time_zone='+05:00';"
	conns[2].vars.key = "time_zone='+01:00';"
	next := 0
	p := newConnPool(connectorFunc(func() driver.Conn { c := conns[next]; next++; return c }), 0, 3, 0, 0)
	var out []*poolConn
	for range conns {
		pc, err := p.get(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pc)
	}
	for _, pc := range out {
		p.put(pc, false)
	}
	for _, want := range []struct {
		key string
		id  int
	}{{"time_zone='+05:00';", 0}, {"time_zone='+01:00';", 2}, {"", 1}} {
		pc, err := p.get(context.Background(), want.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := pc.dc.(*backendConn).Conn.(*fakeConn).id; got != want.id {
			t.Errorf("vars %q: connection %d, want %d", want.key, got, want.id)
		}
		p.put(pc, false)
	}
	pc, _ := p.get(context.Background(), "sql_mode='';")
	if got := pc.dc.(*backendConn).Conn.(*fakeConn).id; got != 1 {
		t.Errorf("no match: connection %d, want the most recently returned (1)", got)
	}
}

// connectorFunc is a driver.Connector of connections f makes.
type connectorFunc func() driver.Conn

func (f connectorFunc) Connect(context.Context) (driver.Conn, error) { return f(), nil }
func (f connectorFunc) Driver() driver.Driver                        { return nil }

// A server's wait_timeout below the configured idle time caps it, once
// reported: the cleaner closes an idle connection before the server
// would, and a checkout never takes one idle past the cap.
func TestConnPoolServerIdleLimit(t *testing.T) {
	fc := &fakeConnector{wait: 600 * time.Millisecond}
	p := newConnPool(fc, 0, 4, 0, time.Minute)
	var told []time.Duration
	var mu sync.Mutex
	p.capped = func(configured, wait, limit time.Duration) {
		mu.Lock()
		told = append(told, configured, wait, limit)
		mu.Unlock()
	}
	defer p.close()
	a, b := mustGet(t, p), mustGet(t, p)
	if a.idleLimit != 400*time.Millisecond {
		t.Fatalf("idle limit %v under wait_timeout 600ms, want 400ms", a.idleLimit)
	}
	p.put(a, false)
	returned := time.Now()
	deadline := returned.Add(5 * time.Second)
	for !a.dc.(*fakeConn).closed.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the cleaner did not close a connection idle past the server's limit")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(returned); d >= 600*time.Millisecond {
		t.Errorf("closed after %v idle: not before the server's wait_timeout", d)
	}

	// A checkout before the cleaner's next round never takes it either.
	p.put(b, false)
	p.mu.Lock()
	b.returned = time.Now().Add(-time.Second)
	p.mu.Unlock()
	c := mustGet(t, p)
	if c == b || !b.dc.(*fakeConn).closed.Load() {
		t.Fatal("a connection idle past the server's limit was handed out")
	}
	p.put(c, false)
	if s := p.stats(); s.MaxIdleTimeClosed != 2 {
		t.Errorf("MaxIdleTimeClosed %d, want 2", s.MaxIdleTimeClosed)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []time.Duration{time.Minute, 600 * time.Millisecond, 400 * time.Millisecond}; !slices.Equal(told, want) {
		t.Errorf("reported %v, want once %v", told, want)
	}
}

// A configured idle time below the server's limit stands, unreported.
func TestConnPoolServerIdleLimitAboveConfigured(t *testing.T) {
	fc := &fakeConnector{wait: time.Hour}
	p := newConnPool(fc, 0, 4, 0, time.Minute)
	p.capped = func(configured, wait, limit time.Duration) { t.Errorf("reported %v %v %v", configured, wait, limit) }
	defer p.close()
	if a := mustGet(t, p); a.idleLimit != time.Minute {
		t.Fatalf("idle limit %v, want the configured 1m", a.idleLimit)
	}
	// No configured limit: the server's, a third below it (30 s at most).
	q := newConnPool(fc, 0, 4, 0, 0)
	defer q.close()
	if a := mustGet(t, q); a.idleLimit != time.Hour-30*time.Second {
		t.Fatalf("idle limit %v without a configured one, want 59m30s", a.idleLimit)
	}
}

// A new connection's wait_timeout: the DSN's parameter, else the probes'
// reading; 0 (ask the connection) for a parameter that is no number.
func TestSessionWait(t *testing.T) {
	var probed atomic.Int64
	probed.Store(int64(7 * time.Second))
	for params, want := range map[string]time.Duration{
		"":                      7 * time.Second,
		"wait_timeout=60":       time.Minute,
		"wait_timeout=%2730%27": 30 * time.Second,
		"wait_timeout=@@x":      0,
	} {
		mc, err := mysql.ParseDSN("app:pw@tcp(10.0.0.1:3306)/app?" + params)
		if err != nil {
			t.Fatal(err)
		}
		if got := sessionWait(mc, &probed)(); got != want {
			t.Errorf("%q: %v, want %v", params, got, want)
		}
	}
}
