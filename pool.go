package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"time"
)

// connPool is a node's pool of backend connections when rwshard opened
// the node itself (a DSN or a Config; OpenDB over the caller's handles
// uses those). rwshard checks a connection out for one statement, or for
// a transaction or a pinned session, and uses the driver connection
// directly while it holds it: through database/sql that would mean using
// it outside Conn.Raw, which database/sql forbids. The pool keeps
// database/sql's contract with the driver: a connection that was used
// before is reset (driver.SessionResetter: go-sql-driver's liveness
// check) when checked out again, one that is no longer valid
// (driver.Validator) or reported driver.ErrBadConn is closed, and limits,
// lifetimes and DBStats mean what they mean in database/sql.
//
// Idle connections are reused newest first. A checkout costs one lock and
// no allocation; waiting for a connection at the cap is first come, first
// served.
//
// No connection stays idle as long as the server lets it: a connection
// that knows its session's wait_timeout (serverIdler) is closed after
// serverIdleLimit of it at the latest, below the configured idle time
// when that is longer, so that the server never closes an idle pooled
// connection under a client that is about to use it.
type connPool struct {
	connector   driver.Connector
	maxOpen     int // 0: no limit
	maxIdle     int
	maxLifetime time.Duration // 0: forever
	maxIdleTime time.Duration // 0: forever
	// capped is told, once, that the server's idle limit is below
	// maxIdleTime (nil: nobody to tell).
	capped func(configured, waitTimeout, limit time.Duration)

	mu      sync.Mutex
	idle    []*poolConn // most recently returned last
	open    int         // connections open or being opened
	waiters []chan poolGrant
	closed  bool
	cleaner bool          // the cleaner goroutine runs
	tick    time.Duration // the cleaner's period
	told    bool          // capped was called
	done    chan struct{}

	waitCount, idleClosed, idleTimeClosed, lifetimeClosed int64
	waitDuration                                          time.Duration
	budget                                                connBudget
	ramp                                                  dialRamp
}

// poolConn is one backend connection of a connPool.
type poolConn struct {
	dc       driver.Conn
	created  time.Time
	returned time.Time
	used     bool // checked out before: reset it before its next use
	// idleLimit closes it after this long idle (0: never): maxIdleTime,
	// or less when its server would close it sooner.
	idleLimit time.Duration
}

// serverIdler is a connection that knows its session's wait_timeout (0:
// unknown), read when it connected, and since when it has been idle.
type serverIdler interface {
	serverWaitTimeout() time.Duration
	idleSince(now time.Time) time.Time
}

// serverIdleLimit is how long a connection whose session has wait_timeout
// wt may stay idle: a third of wt (at most 30 s) below it, for the
// cleaner's period and the time between the server's last packet and the
// connection's return to the pool.
func serverIdleLimit(wt time.Duration) (limit, margin time.Duration) {
	margin = min(wt/3, 30*time.Second)
	return wt - margin, margin
}

// poolGrant is what a waiter receives: a connection, a reserved slot to
// open one in (both nil), or the pool's end.
type poolGrant struct {
	pc  *poolConn
	err error
}

var errPoolClosed = errors.New("rwshard: connector closed")

func newConnPool(c driver.Connector, maxOpen, maxIdle int, lifetime, idleTime time.Duration) *connPool {
	if maxOpen > 0 && maxIdle > maxOpen {
		maxIdle = maxOpen
	}
	d := lifetime
	if idleTime > 0 && (d == 0 || idleTime < d) {
		d = idleTime
	}
	return &connPool{connector: c, maxOpen: maxOpen, maxIdle: max(maxIdle, 0),
		maxLifetime: lifetime, maxIdleTime: idleTime, tick: max(d/2, time.Second), done: make(chan struct{})}
}

// affinityScan bounds how many idle connections get looks through for
// one with the wanted session variables.
const affinityScan = 8

// get checks a connection out: an idle one (reset first), a new one, or,
// at the cap, the next one returned. Of the idle ones, the most recently
// returned whose session variables are vars (backendConn.vars: what
// rwshard applied to it) among the newest affinityScan, else the most
// recently returned: logical connections with different settings that
// read in turn then find connections already set as they need, instead
// of setting and restoring one at every switch.
func (p *connPool) get(ctx context.Context, vars string) (*poolConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		if n := len(p.idle); n > 0 {
			i := p.affine(vars)
			pc := p.idle[i]
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			now := time.Now()
			if p.expired(pc, now) {
				p.mu.Lock()
				p.lifetimeClosed++
				p.mu.Unlock()
				p.discard(pc)
				continue
			}
			if pc.idleTooLong(now) {
				// The cleaner had not come by yet: the server may be
				// closing it now.
				p.mu.Lock()
				p.idleTimeClosed++
				p.mu.Unlock()
				p.discard(pc)
				continue
			}
			if err := p.reset(ctx, pc); err != nil {
				if errors.Is(err, driver.ErrBadConn) {
					continue // closed by the server while idle: try the next
				}
				return nil, err
			}
			return pc, nil
		}
		if lim, _ := p.limit(time.Now()); lim < 0 || p.open < lim {
			p.open++
			p.mu.Unlock()
			pc, err := p.connect(ctx)
			if serverErrno(err) == erTooManyConnections {
				continue // the server is full: wait at the limit now known
			}
			return pc, err
		}
		pc, err := p.wait(ctx)
		if err == errRecheck {
			continue
		}
		if err != nil || pc == nil {
			if err != nil {
				return nil, err
			}
			pc, err := p.connect(ctx) // a slot was reserved for us
			if serverErrno(err) == erTooManyConnections {
				continue
			}
			return pc, err
		}
		if err := p.reset(ctx, pc); err != nil {
			if errors.Is(err, driver.ErrBadConn) {
				continue
			}
			return nil, err
		}
		return pc, nil
	}
}

// affine is the index in p.idle of the connection get takes (p.mu held).
func (p *connPool) affine(vars string) int {
	n := len(p.idle)
	for i := n - 1; i >= 0 && i >= n-affinityScan; i-- {
		if bc, ok := p.idle[i].dc.(*backendConn); !ok || sameKey(bc.vars.key, vars) {
			return i
		}
	}
	return n - 1
}

// errRecheck ends a wait whose limit came from a look at the server that
// has gone stale meanwhile: get tries again under the limit known now.
var errRecheck = errors.New("rwshard: recheck the pool's limit")

// wait queues for a connection; p.mu is held on entry and released. It
// ends with a connection, a slot to open one in, or, past ConnWait or the
// context, an error: ErrConnBudget when the limit was the server's share.
func (p *connPool) wait(ctx context.Context) (*poolConn, error) {
	ch := make(chan poolGrant, 1)
	p.waiters = append(p.waiters, ch)
	p.waitCount++
	now := time.Now()
	lim, by := p.limit(now)
	budget := p.budget
	var expire, recheck <-chan time.Time
	if budget.wait > 0 {
		t := time.NewTimer(budget.wait)
		defer t.Stop()
		expire = t.C
	}
	if by == limitRoom {
		// No connection of ours may come back to wake us: look again once
		// the server's figures are stale.
		t := time.NewTimer(max(budget.at.Add(budgetFresh).Sub(now), time.Millisecond))
		defer t.Stop()
		recheck = t.C
	}
	p.mu.Unlock()
	start := now
	defer func() {
		d := time.Since(start)
		p.mu.Lock()
		p.waitDuration += d
		p.mu.Unlock()
	}()
	var err error
	select {
	case g := <-ch:
		return g.pc, g.err
	case <-ctx.Done():
		err = ctx.Err()
		if by != limitMaxOpen {
			err = budget.err(lim, by, err)
		}
	case <-expire:
		err = budget.err(lim, by, nil)
	case <-recheck:
		err = errRecheck
	}
	p.mu.Lock()
	for i, w := range p.waiters {
		if w == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return nil, err
		}
	}
	p.mu.Unlock()
	// Granted meanwhile: take it unless the context ended.
	g := <-ch
	if err == errRecheck || ctx.Err() == nil && g.err == nil {
		return g.pc, g.err
	}
	if g.err == nil {
		if g.pc != nil {
			p.put(g.pc, false)
		} else {
			p.released()
		}
	}
	return nil, err
}

// connect opens a connection in a slot already counted in p.open.
func (p *connPool) connect(ctx context.Context) (*poolConn, error) {
	if err := p.dialTurn(ctx); err != nil {
		p.released()
		return nil, err
	}
	dc, err := p.connector.Connect(ctx)
	if err != nil {
		if serverErrno(err) == erTooManyConnections {
			p.full()
		}
		p.dialFailed(ctx, err)
		p.released()
		return nil, err
	}
	p.dialed()
	if p.lookDue(time.Now()) {
		if err := p.lookOn(ctx, dc); err != nil {
			_ = dc.Close()
			p.released()
			return nil, err
		}
	}
	return &poolConn{dc: dc, created: time.Now(), idleLimit: p.idleLimit(dc)}, nil
}

// idleLimit is how long dc may stay idle: maxIdleTime, capped below the
// server's wait_timeout when dc knows it. The first cap below the
// configured idle time is reported.
func (p *connPool) idleLimit(dc driver.Conn) time.Duration {
	si, ok := dc.(serverIdler)
	if !ok || si.serverWaitTimeout() <= 0 {
		return p.maxIdleTime
	}
	wt := si.serverWaitTimeout()
	limit, margin := serverIdleLimit(wt)
	if p.maxIdleTime > 0 && p.maxIdleTime <= limit {
		return p.maxIdleTime
	}
	p.mu.Lock()
	p.tick = min(p.tick, max(margin/2, 100*time.Millisecond))
	tell := !p.told && p.capped != nil
	p.told = true
	p.mu.Unlock()
	if tell {
		p.capped(p.maxIdleTime, wt, limit)
	}
	return limit
}

// idleTooLong reports a connection idle for its idle limit or longer.
func (pc *poolConn) idleTooLong(now time.Time) bool {
	return pc.idleLimit > 0 && now.Sub(pc.returned) >= pc.idleLimit
}

// reset prepares a connection used before for its next user; a broken
// one is closed.
func (p *connPool) reset(ctx context.Context, pc *poolConn) error {
	if !pc.used {
		return nil
	}
	if err := resetConn(ctx, pc.dc); err != nil {
		p.discard(pc)
		return err
	}
	return nil
}

func (p *connPool) expired(pc *poolConn, now time.Time) bool {
	return p.maxLifetime > 0 && now.Sub(pc.created) >= p.maxLifetime
}

// put returns a checked-out connection; discard closes it instead.
func (p *connPool) put(pc *poolConn, discard bool) {
	if !discard {
		if !validConn(pc.dc) {
			discard = true
		}
	}
	now := time.Now()
	if !discard && p.expired(pc, now) {
		p.mu.Lock()
		p.lifetimeClosed++
		p.mu.Unlock()
		discard = true
	}
	if discard {
		p.discard(pc)
		return
	}
	pc.used, pc.returned = true, now
	if si, ok := pc.dc.(serverIdler); ok {
		pc.returned = si.idleSince(now)
	}
	p.mu.Lock()
	if len(p.waiters) > 0 {
		w := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.mu.Unlock()
		w <- poolGrant{pc: pc}
		return
	}
	if lim, _ := p.limit(now); p.closed || len(p.idle) >= p.maxIdle || lim >= 0 && p.open > lim {
		if !p.closed {
			p.idleClosed++
		}
		p.mu.Unlock()
		p.discard(pc)
		return
	}
	p.idle = append(p.idle, pc)
	if !p.cleaner && (p.maxLifetime > 0 || pc.idleLimit > 0) {
		p.cleaner = true
		go p.clean()
	}
	p.mu.Unlock()
}

// discard closes a connection and frees its slot.
func (p *connPool) discard(pc *poolConn) {
	_ = pc.dc.Close()
	p.released()
}

// released frees one slot of p.open: the first waiter may open a
// connection in it.
func (p *connPool) released() {
	p.mu.Lock()
	if lim, _ := p.limit(time.Now()); len(p.waiters) > 0 && !p.closed && (lim < 0 || p.open <= lim) {
		w := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.mu.Unlock()
		w <- poolGrant{}
		return
	}
	p.open--
	p.mu.Unlock()
}

// clean closes idle connections past their lifetime or idle limit, as
// database/sql's connection cleaner does: at most once a second, or more
// often when a server's idle limit needs it (see idleLimit).
func (p *connPool) clean() {
	p.mu.Lock()
	d := p.tick
	p.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			var old []*poolConn
			p.mu.Lock()
			t.Reset(p.tick)
			kept := p.idle[:0]
			for _, pc := range p.idle {
				switch {
				case p.expired(pc, now):
					p.lifetimeClosed++
					old = append(old, pc)
				case pc.idleTooLong(now):
					p.idleTimeClosed++
					old = append(old, pc)
				default:
					kept = append(kept, pc)
				}
			}
			clear(p.idle[len(kept):])
			p.idle = kept
			p.mu.Unlock()
			for _, pc := range old {
				p.discard(pc)
			}
		}
	}
}

// close closes the idle connections and ends the waits; connections
// checked out are closed when returned.
func (p *connPool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	idle, waiters := p.idle, p.waiters
	p.idle, p.waiters = nil, nil
	p.open -= len(idle)
	p.mu.Unlock()
	for _, w := range waiters {
		w <- poolGrant{err: errPoolClosed}
	}
	var errs []error
	for _, pc := range idle {
		errs = append(errs, pc.dc.Close())
	}
	return errors.Join(errs...)
}

// stats reports the pool as database/sql reports its own, its limit the
// one in force now.
func (p *connPool) stats() sql.DBStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	lim, _ := p.limit(time.Now())
	return sql.DBStats{
		MaxOpenConnections: max(lim, 0), // the limit in force: MaxOpenConns or the budget's
		OpenConnections:    p.open,
		InUse:              p.open - len(p.idle),
		Idle:               len(p.idle),
		WaitCount:          p.waitCount,
		WaitDuration:       p.waitDuration,
		MaxIdleClosed:      p.idleClosed,
		MaxIdleTimeClosed:  p.idleTimeClosed,
		MaxLifetimeClosed:  p.lifetimeClosed,
	}
}
