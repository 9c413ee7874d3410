package rwshard

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/router"
)

// Transaction guards (Config.TxIdleTimeout, TxWarnAge): timers armed when
// a transaction opens on a logical connection. The idle timer fires on
// its own goroutine; it only closes the transaction's socket
// (backendConn.interrupt, safe from any goroutine), after winning the
// guard's state from idle, so it never cuts a statement that is running.
// The caller's goroutine finds the expiry at its next statement, Commit or
// release and cleans up there.

const (
	guardIdle int32 = iota
	guardBusy
	guardExpired
	guardDone
	guardLimited // ended by Config.HoldLimit (holdwatch.go)
)

type txGuard struct {
	state   atomic.Int32
	timeout time.Duration
	idle    *time.Timer
	old     *time.Timer
	bc      *backendConn // the transaction's connection
	hold    *holdRec     // the transaction's hold (Config.HoldWarn, HoldLimit); nil: not watched
}

// armGuard starts the guards of a transaction now open on c.sess, begun
// by the statement q.
func (c *conn) armGuard(q string) {
	cfg := c.cl.cfg
	if cfg.TxIdleTimeout <= 0 && cfg.TxWarnAge <= 0 && c.cl.holds == nil || c.guard != nil || c.sess == nil {
		return
	}
	bc, _ := c.sess.dc.(*backendConn)
	g := &txGuard{timeout: cfg.TxIdleTimeout, bc: bc}
	node := c.sess.node.name
	if c.cl.holds != nil {
		g.hold = c.cl.holds.begin("a transaction", q, node, bc, g)
	}
	if g.timeout > 0 && bc != nil {
		g.idle = time.AfterFunc(g.timeout, func() {
			if g.state.CompareAndSwap(guardIdle, guardExpired) {
				g.bc.interrupt()
				c.cl.mon.Emit(health.Event{Kind: health.TxIdleTimeout, Node: node,
					Detail: fmt.Sprintf("no statement for %v: connection closed, the server rolled the transaction back", g.timeout)})
			}
		})
	}
	if cfg.TxWarnAge > 0 {
		g.old = time.AfterFunc(cfg.TxWarnAge, func() {
			if g.state.Load() != guardDone {
				c.cl.mon.Emit(health.Event{Kind: health.LongTransaction, Node: node,
					Detail: fmt.Sprintf("a transaction open longer than %v", cfg.TxWarnAge)})
			}
		})
	}
	c.guard = g
}

// enter marks a statement of c running in the guarded transaction; an
// error if the transaction already expired.
func (g *txGuard) enter(c *conn, q string) error {
	if g.state.CompareAndSwap(guardIdle, guardBusy) {
		return nil
	}
	if g.expired() {
		return c.expired(q)
	}
	return nil
}

// leave ends the statement: the idle time counts from now.
func (g *txGuard) leave() {
	if !g.state.CompareAndSwap(guardBusy, guardIdle) {
		return
	}
	if g.idle != nil {
		g.idle.Reset(g.timeout)
	}
}

// expired reports that the idle timer or the hold limit cut the
// transaction.
func (g *txGuard) expired() bool {
	s := g.state.Load()
	return s == guardExpired || s == guardLimited
}

// disarmGuard ends the guards when the transaction ends.
func (c *conn) disarmGuard() {
	g := c.guard
	if g == nil {
		return
	}
	c.guard = nil
	g.state.Store(guardDone)
	if g.hold != nil {
		g.hold.finish()
	}
	if g.idle != nil {
		g.idle.Stop()
	}
	if g.old != nil {
		g.old.Stop()
	}
}

// expired gives up the transaction that the idle timer cut: the logical
// connection is broken (its session is gone) and the caller is told why,
// at this statement and at the Commit that follows.
func (c *conn) expired(q string) error {
	var n *node
	if c.sess != nil {
		n = c.sess.node
	}
	cause := ErrTxIdleTimeout
	if c.guard != nil && c.guard.state.Load() == guardLimited {
		cause = ErrHoldLimit
	}
	err := routeErr(n, router.ReasonInTransaction, q, cause)
	c.breakSession(err)
	return err
}
