package rwshard

import (
	"context"
	"database/sql/driver"

	"github.com/rwshard/rwshard/health"
)

// Probe runs one health probe of node i (in Config.Nodes order), as the
// health monitor does, for tests.
func (c *Connector) Probe(ctx context.Context, i int) (health.Reading, error) {
	return c.cl.probe(ctx, i)
}

// ConvertPlain is convertPlain, for tests.
func ConvertPlain(nv *driver.NamedValue) bool { return convertPlain(nv) }
