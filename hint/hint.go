package hint

import (
	"context"
	"sync/atomic"
	"time"
)

// Route is an explicit wish about where a statement runs.
type Route uint8

const (
	// Default leaves the decision to the router (the zero value).
	Default Route = iota
	// ReplicaOK accepts a replica for a read the router would otherwise
	// send to the primary for consistency reasons. It never sends a write
	// to a replica.
	ReplicaOK
	// NodeOnly sends the statement to the node named in Hint.Node.
	NodeOnly
	// PrimaryOnly sends the statement to the primary. It is the strongest
	// wish: merged with any other, it wins.
	PrimaryOnly
)

// String returns the name used in plan reasons and hint comments.
func (r Route) String() string {
	switch r {
	case ReplicaOK:
		return "replica"
	case PrimaryOnly:
		return "primary"
	case NodeOnly:
		return "node"
	default:
		return "default"
	}
}

// Hint is a set of routing wishes for one statement. The zero value asks
// for nothing.
type Hint struct {
	Route Route
	// Node names the node for NodeOnly.
	Node string
	// MaxLag, when positive, narrows the replica lag limit for the statement.
	MaxLag time.Duration
	// Pool names the replica pool a read runs on (rwshard.pools): reports
	// and exports kept off the replicas that serve online reads. "" is
	// the default pool, the replicas in no named pool.
	Pool string
}

// IsZero reports whether h asks for nothing.
func (h Hint) IsZero() bool { return h == Hint{} }

// Merge combines two hints, for example one from the context and one from
// a SQL comment. The stronger route wins (primary over node over replica
// over default); between two different nodes the second (b) wins; the
// smaller positive MaxLag wins.
func Merge(a, b Hint) Hint {
	out := a
	if b.Route > out.Route || (b.Route == NodeOnly && out.Route == NodeOnly) {
		out.Route, out.Node = b.Route, b.Node
	}
	if b.MaxLag > 0 && (out.MaxLag <= 0 || b.MaxLag < out.MaxLag) {
		out.MaxLag = b.MaxLag
	}
	if b.Pool != "" {
		out.Pool = b.Pool
	}
	return out
}

// ctxKey is the unexported key under which a Hint rides in a context.
type ctxKey struct{}

// made is set before the first context carrying a hint is made. Until
// then no context can carry one, and FromContext answers without walking
// the context's chain, which it otherwise does for every statement: most
// programs never set a context hint. A context reaches another goroutine
// only through an operation that synchronizes, after which that goroutine
// sees the flag set.
var made atomic.Bool

// FromContext returns the hint carried by ctx. Without one it returns the
// zero Hint and false: the router decides alone.
func FromContext(ctx context.Context) (h Hint, ok bool) {
	if made.Load() {
		h, ok = fromContext(ctx)
	}
	return h, ok
}

// Made reports whether any hint was ever put into a context in this
// process. Without one, FromContext finds nothing in any context: a
// caller on a hot path may test this first and keep the lookup out of
// line.
func Made() bool { return made.Load() }

// fromContext is FromContext's lookup, kept out of line so that
// FromContext inlines: without a hint made, a statement pays one load.
//
//go:noinline
func fromContext(ctx context.Context) (Hint, bool) {
	h, ok := ctx.Value(ctxKey{}).(Hint)
	return h, ok
}

// newContext is the one place a hint is put into a context.
func newContext(ctx context.Context, h Hint) context.Context {
	if !made.Load() { // a store only once: the flag is read everywhere
		made.Store(true)
	}
	return context.WithValue(ctx, ctxKey{}, h)
}

func with(ctx context.Context, f func(*Hint)) context.Context {
	h, _ := FromContext(ctx)
	f(&h)
	return newContext(ctx, h)
}

// Primary returns a context whose statements run on the primary.
func Primary(ctx context.Context) context.Context {
	return with(ctx, func(h *Hint) { h.Route, h.Node = PrimaryOnly, "" })
}

// Replica returns a context whose reads may run on a replica even where the
// consistency rules would send them to the primary (after a write in the
// session, for example). Writes still go to the primary.
func Replica(ctx context.Context) context.Context {
	return with(ctx, func(h *Hint) { h.Route, h.Node = ReplicaOK, "" })
}

// Node returns a context whose statements run on the named node ("primary"
// or a replica name). A write pinned to a replica fails; it is never sent.
func Node(ctx context.Context, name string) context.Context {
	return with(ctx, func(h *Hint) { h.Route, h.Node = NodeOnly, name })
}

// MaxLag returns a context whose reads may only use replicas whose measured
// lag is at most d. A non-positive d removes the bound.
func MaxLag(ctx context.Context, d time.Duration) context.Context {
	return with(ctx, func(h *Hint) { h.MaxLag = max(d, 0) })
}

// Pool returns a context whose reads run on the replicas of the named
// pool (rwshard.pools): a report or an export that must not load the
// replicas serving online traffic. Writes still go to the primary.
func Pool(ctx context.Context, name string) context.Context {
	return with(ctx, func(h *Hint) { h.Pool = name })
}

// NewContext returns a context carrying h in place of any hint ctx
// carries: the sharding module hands a statement's merged hint (context
// and comment) to the connection of each shard this way.
func NewContext(ctx context.Context, h Hint) context.Context {
	return newContext(ctx, h)
}
