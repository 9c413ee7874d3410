package rwshard

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"
)

// The connection budget of a node's pool (Config.FleetSize, ConnWait):
// the pool learns the server's max_connections from the health probe
// (probe.go) and, with Threads_connected, on a connection it has just
// opened when its figures are older than budgetLook, and never opens
// more than
//
//   - MaxOpenConns, when set;
//   - its share, usableConns(max_connections) / FleetSize minus the
//     connector's own probe connections, when FleetSize is set;
//   - what it had open at the last look plus what the server had free
//     then (usableConns(max_connections) − Threads_connected, if above 0),
//     while that look is fresh (budgetFresh).
//
// A statement at the limit waits for a connection (connPool.wait); a dial
// the server refuses as full (1040, someone else's connections) makes the
// pool take the server as full and wait likewise, rather than hand the
// caller the refusal.

// erTooManyConnections is the server's ER_CON_COUNT_ERROR.
const erTooManyConnections = 1040

const (
	// budgetFresh: the server's figures are trusted this long, then the
	// pool opens a connection again to look (a pool that waits at a stale
	// limit would wait for nothing).
	budgetFresh = 5 * time.Second
	// budgetLook: a connection just opened reads the figures when they
	// are older than this.
	budgetLook = 2 * time.Second
)

// usableConns is the part of max_connections rwshard's pools may use:
// a tenth stays free for administrators, migrations and monitoring
// beside the application (MariaDB's one extra connection for SUPER is
// not the application user's to count on).
func usableConns(maxConns int) int { return maxConns - maxConns/10 }

// limitBy says what set a pool's limit.
type limitBy uint8

const (
	limitNone    limitBy = iota
	limitMaxOpen         // rwshard.maxOpenConns
	limitShare           // the fleet's share of max_connections
	limitRoom            // what the server had free at the last look
)

// connBudget is what a pool knows of its server's connection limit; p.mu
// guards it.
type connBudget struct {
	node    string
	fleet   int           // Config.FleetSize; 0: no share
	reserve int           // the connector's connections outside the pool (probes)
	wait    time.Duration // Config.ConnWait; 0: the context's
	look    bool          // read the figures on new connections (rwshard's own pools)

	maxConns int       // max_connections; 0: unknown
	room     int       // connections the server had free for the application at the look
	openAt   int       // the pool's open connections then
	at       time.Time // when; zero: never
	reading  bool      // a new connection is reading them now
}

// limit is the most connections the pool may have open now, and what set
// it; -1: no limit. p.mu is held.
func (p *connPool) limit(now time.Time) (int, limitBy) {
	lim, by := -1, limitNone
	if p.maxOpen > 0 {
		lim, by = p.maxOpen, limitMaxOpen
	}
	b := &p.budget
	if b.maxConns > 0 && b.fleet > 0 {
		if s := max(usableConns(b.maxConns)/b.fleet-b.reserve, 1); lim < 0 || s < lim {
			lim, by = s, limitShare
		}
	}
	if !b.at.IsZero() && now.Sub(b.at) < budgetFresh {
		// What it had stays: a server over the mark stops the pool's
		// growth, it does not make it close and reopen connections.
		if r := max(b.openAt+max(b.room, 0), 0); lim < 0 || r < lim {
			lim, by = r, limitRoom
		}
	}
	return lim, by
}

// observe records the server's max_connections and Threads_connected,
// and lets waiters open connections if the limit rose.
func (p *connPool) observe(maxConns, threads int, now time.Time) {
	p.mu.Lock()
	b := &p.budget
	b.maxConns, b.room, b.openAt, b.at = maxConns, usableConns(maxConns)-threads, p.open, now
	p.grantLocked(now)
}

// observeMax records the server's max_connections alone (the probe's).
func (p *connPool) observeMax(maxConns int) {
	p.mu.Lock()
	if p.budget.maxConns == maxConns {
		p.mu.Unlock()
		return
	}
	p.budget.maxConns = maxConns
	p.grantLocked(time.Now())
}

// grantLocked lets waiters open connections while the limit allows, and
// unlocks p.mu.
func (p *connPool) grantLocked(now time.Time) {
	var grants []chan poolGrant
	for len(p.waiters) > 0 && !p.closed {
		if lim, _ := p.limit(now); lim >= 0 && p.open >= lim {
			break
		}
		grants = append(grants, p.waiters[0])
		p.waiters = p.waiters[1:]
		p.open++
	}
	p.mu.Unlock()
	for _, w := range grants {
		w <- poolGrant{}
	}
}

// full records a dial the server refused as full (1040): the pool keeps
// what it has, the failed dial's slot not counted. p.mu is not held.
func (p *connPool) full() {
	p.mu.Lock()
	b := &p.budget
	b.room, b.openAt, b.at = 0, p.open-1, time.Now()
	p.mu.Unlock()
}

// err is the error of a wait at the limit lim set by by, b a copy of the
// pool's budget taken under p.mu; cause is the context's error, nil when
// ConnWait ran out.
func (b *connBudget) err(lim int, by limitBy, cause error) error {
	var what string
	switch by {
	case limitMaxOpen:
		what = "rwshard.maxOpenConns"
	case limitShare:
		what = fmt.Sprintf("its share of max_connections=%d with rwshard.fleetSize=%d", b.maxConns, b.fleet)
	default:
		what = fmt.Sprintf("the server was full: max_connections=%d less a tenth kept free", b.maxConns)
		if b.maxConns == 0 {
			what = "the server was full: it refused a connection (1040)"
		}
	}
	msg := fmt.Sprintf("limit of %d connections to %s reached (%s)", lim, b.node, what)
	if cause != nil {
		return fmt.Errorf("%w: %s: %w", ErrConnBudget, msg, cause)
	}
	return fmt.Errorf("%w: %s; none came free within rwshard.connWait (%s)", ErrConnBudget, msg, b.wait)
}

// lookDue reports whether a connection just opened should read the
// server's figures, and if so claims the reading. p.mu is not held.
func (p *connPool) lookDue(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &p.budget
	if !b.look || b.reading || !b.at.IsZero() && now.Sub(b.at) < budgetLook {
		return false
	}
	b.reading = true
	return true
}

// lookOn reads max_connections and Threads_connected on dc, a connection
// just opened. A server error (an unusual server) turns the reading off;
// a broken connection's error is returned.
func (p *connPool) lookOn(ctx context.Context, dc driver.Conn) error {
	maxConns, threads, err := readBudget(ctx, dc)
	p.mu.Lock()
	p.budget.reading = false
	if err != nil && serverErrno(err) != 0 {
		p.budget.look = false
		err = nil
	}
	p.mu.Unlock()
	if err == nil && maxConns > 0 {
		p.observe(maxConns, threads, time.Now())
	}
	return err
}

// readBudget reads the server's max_connections and Threads_connected,
// with SHOW statements (no privilege needed on MariaDB or MySQL), which
// leave the server's Com_select to the application's statements.
func readBudget(ctx context.Context, dc driver.Conn) (maxConns, threads int, err error) {
	if maxConns, err = showValue(ctx, dc, "SHOW GLOBAL VARIABLES LIKE 'max_connections'"); err != nil {
		return 0, 0, err
	}
	threads, err = showValue(ctx, dc, "SHOW GLOBAL STATUS LIKE 'Threads_connected'")
	return maxConns, threads, err
}

// showValue is the integer value of the one row of a SHOW … LIKE.
func showValue(ctx context.Context, dc driver.Conn, q string) (int, error) {
	row, err := queryRow(ctx, dc, q, nil)
	if err != nil {
		return 0, err
	}
	if len(row) < 2 {
		return 0, fmt.Errorf("%s: %d columns, want the name and the value", q, len(row))
	}
	return strconv.Atoi(fmt.Sprint(row[1]))
}
