package labtest

import (
	"context"
	"sync/atomic"

	"github.com/rwshard/rwshard"
)

// CancelOn is an rwshard.Tracer that cancels a context when a statement
// ends on one node: the caller gone just as its write returned, before
// rwshard read the write's GTID.
type CancelOn struct {
	node   string
	cancel atomic.Pointer[context.CancelFunc]
}

// NewCancelOn returns a CancelOn for the node named node.
func NewCancelOn(node string) *CancelOn { return &CancelOn{node: node} }

// Arm makes the next statement that ends on the node call cancel.
func (c *CancelOn) Arm(cancel context.CancelFunc) { c.cancel.Store(&cancel) }

// Fired reports whether the armed cancel was called.
func (c *CancelOn) Fired() bool { return c.cancel.Load() == nil }

func (c *CancelOn) StatementStart(ctx context.Context, _ rwshard.StatementStart) context.Context {
	return ctx
}

func (c *CancelOn) StatementEnd(_ context.Context, e rwshard.StatementEnd) {
	if e.Node == c.node {
		if f := c.cancel.Swap(nil); f != nil {
			(*f)()
		}
	}
}
