package rwshard

import (
	"context"
	"database/sql/driver"

	"github.com/rwshard/rwshard/internal/monitor"
)

// Probe runs one health probe of node i (in Config.Nodes order), as the
// health monitor does, for tests.
func (c *Connector) Probe(ctx context.Context, i int) (monitor.Reading, error) {
	return c.cl.probe(ctx, i)
}

// ConvertPlain is convertPlain, for tests.
func ConvertPlain(nv *driver.NamedValue) bool { return convertPlain(nv) }

// HeldRawRows reports whether dc, a logical connection as sql.Conn.Raw
// hands it, holds a backend connection whose read rows went to
// database/sql as go-sql-driver's own (the short path's raw rows), for
// tests that meet them as an application does.
func HeldRawRows(dc any) bool {
	c, ok := dc.(*conn)
	return ok && c.sess != nil && c.sess.raw
}

// TxOpen reports whether dc, a logical connection as sql.Conn.Raw hands
// it, has a BeginTx transaction open.
func TxOpen(dc any) bool {
	c, ok := dc.(*conn)
	return ok && c.tx != nil
}

// SetDialRamp turns the slow start of dials (dialramp.go) on or off in
// every pool of c, for tests that measure without it.
func SetDialRamp(c *Connector, on bool) {
	for _, cl := range c.clusters() {
		for _, n := range cl.nodes {
			if n.conns != nil {
				n.conns.mu.Lock()
				n.conns.ramp = dialRamp{off: !on}
				n.conns.mu.Unlock()
			}
		}
	}
}
