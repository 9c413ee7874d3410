package rwshard

import (
	"context"

	"github.com/rwshard/rwshard/health"
)

// Probe runs one health probe of node i (in Config.Nodes order), as the
// health monitor does, for tests.
func (c *Connector) Probe(ctx context.Context, i int) (health.Reading, error) {
	return c.cl.probe(ctx, i)
}
