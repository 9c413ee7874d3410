package rwshard

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math/bits"
	"time"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/monitor"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// The plan of one statement: the one place that decides where it runs.
// plan turns the statement, the logical connection's state, the hints,
// the read-your-writes scope and the health snapshot into a plan, which
// the executor (execute.go) carries out and nothing rewrites; Explain
// describes the same plan without running it.

// where says which connection a plan runs on.
type where uint8

const (
	// toPrimary: a connection of the primary, waiting up to WritePause
	// for a usable one. The zero value: when in doubt, the primary.
	toPrimary where = iota
	// toHeld: the logical connection's own backend connection (its
	// transaction, its session state, or the primary connection it kept),
	// taking one of the primary if it holds none.
	toHeld
	// toReplicas: one of plan.targets, picked by the balancer as it runs;
	// when none serves, plan.fallback says where it goes.
	toReplicas
	// toNode: plan.node, which a hint named.
	toNode
)

// nodeSet is a set of a cluster's nodes by index (Config.Nodes has at
// most maxNodes).
type nodeSet uint64

// maxNodes bounds the nodes of one cluster.
const maxNodes = 64

func (s nodeSet) has(i int) bool     { return s&(1<<uint(i)) != 0 }
func (s nodeSet) with(i int) nodeSet { return s | 1<<uint(i) }
func (s nodeSet) len() int           { return bits.OnesCount64(uint64(s)) }

// routed is the part of a plan that depends on the statement's text, the
// hints and the connection's state alone: its class, the hint that
// applies (the context's merged with the text's) and the router's
// decision. A prepared statement remembers it (stmt.routes).
type routed struct {
	d   route.Decision // first: with cls.Kind and cls.Effect, what a statement reads
	cls route.Class
	h   hint.Hint
}

// plan is where a statement runs and why.
type plan struct {
	// r is the routed part, copied: a pointer to the caller's storage
	// would move that to the heap with the plan's other pointers.
	r      routed
	ok     bool          // planned: r holds the decision
	reason router.Reason // why it runs where it does (router.Reason names)
	where  where
	// effects change the session when the statement succeeds on the held
	// connection: its class's (a BeginTx's BEGIN has none of its own).
	effects route.Effect
	// stmt: the caller's statement, counted per node as it is sent (a
	// prepare, a BEGIN, a ping are not).
	stmt bool
	node *node // toNode's node
	// A read's (toReplicas): the nodes that may serve it; the GTID they
	// must wait for (none is known to have it: they are the closest);
	// where it goes when none serves (the primary for that reason, or
	// fallbackErr); and the rules that chose them.
	targets     nodeSet
	wait        monitor.GTIDSet
	fallback    router.Reason
	fallbackErr error
	f           readFilter
}

// plan makes the plan of statement q (ps: the caller's prepared
// statement for it, nil for a text one) into p.
func (c *conn) plan(ctx context.Context, q string, ps *stmt, p *plan) error {
	if !c.cl.started.Load() {
		c.cl.awaitStart(ctx)
	}
	r, err := c.route(ctx, q, ps, &p.r)
	if err != nil {
		return err
	}
	if r != &p.r {
		p.r = *r // remembered by the prepared statement
	}
	p.ok, p.reason, p.effects, p.stmt = true, r.d.Reason, r.cls.Effect, true
	switch d := &p.r.d; {
	case d.Target == route.ToSession || d.Pin:
		p.where = toHeld
	case d.Target == route.ToReplica:
		if c.more && len(c.kept.temps) > 0 && route.Mentions(q, c.kept.temps) {
			p.where, p.reason = toHeld, router.ReasonTempTable // the held connection has it
			return nil
		}
		p.where = toReplicas
		return c.planRead(ctx, q, p)
	case d.Target == route.ToNode:
		n, err := c.cl.namedNode(r.cls, *d, q)
		if err != nil {
			return err
		}
		p.where, p.node = toNode, n
		if c.cl.isPrimary(n) {
			p.where = toPrimary
		}
	}
	if p.where == toPrimary && c.heldPrimary() {
		p.where = toHeld
	}
	if p.where == toHeld && c.sess != nil && !targetOK(c.sess, r.cls.Kind == route.Read) {
		if c.cl.galera {
			return c.writerMoved(q, p.reason)
		}
		// A session on a replica (a read-only transaction) runs plain
		// reads only: rwshard never sends anything else to a replica.
		return routeErr(c.sess.node, p.reason, q, ErrWriteToReplica)
	}
	return nil
}

// planRead plans a read bound for a replica: the replicas that qualify
// now under the health, lag, pool and consistency rules; if none does,
// those closest to the scope's last write, to wait on; and the fallback.
// It never asks the balancer, which picks among the targets as the read
// runs: Explain, which plans too, moves no balancer state.
func (c *conn) planRead(ctx context.Context, q string, p *plan) error {
	cl := c.cl
	p.f = c.filter(ctx, p.r.h)
	f := &p.f
	if f.pool < 0 {
		return cl.unknownPool(q)
	}
	prim := cl.primary()
	targets, anyHealthy := cl.qualifying(f, prim)
	if targets == 0 && f.poolUnavailable(anyHealthy) {
		toPrimary, err := cl.poolFallback(f, q)
		if err != nil {
			return err
		}
		if toPrimary {
			p.fallback = router.ReasonNoHealthyReplica
			return nil
		}
		targets, anyHealthy = cl.qualifying(f, prim)
	}
	p.targets = targets
	if targets == 0 && anyHealthy && !f.gtid.IsZero() && cl.cfg.CausalWait == CausalWaitOnReplica {
		if set := cl.closest(f); set != 0 {
			p.targets, p.wait, p.fallback = set, f.gtid, router.ReasonReadYourWrites
			return nil
		}
	}
	// Where the read goes when no target serves: none qualified, or those
	// that did failed.
	p.fallback, p.fallbackErr = cl.readFallback(f, anyHealthy, q)
	return nil
}

// qualifying is the set of nodes that may serve a read under f; others
// reports a replica outside it that is healthy but excluded by f's
// consistency or lag rules.
func (cl *cluster) qualifying(f *readFilter, prim *node) (set nodeSet, others bool) {
	for i, n := range cl.nodes {
		ok, healthy := cl.readable(f, n, prim)
		others = others || healthy && !ok
		if ok {
			set = set.with(i)
		}
	}
	return set, others
}

// closest is the set of replicas a causal read waits on when none is
// known to have the scope's GTID yet: the healthy replicas within a probe
// interval of the least lag, and only if that lag is under the causal
// timeout (a replica far behind would only make the read wait the full
// timeout, then go to the primary). Empty when none qualifies.
//
// On Galera, when no reader's lag is known to be that small, every
// serving reader qualifies: it has certified every write-set the cluster
// has, and flow control keeps what it has yet to apply short, whatever
// its probes last saw. Its lag is known only from a probe that found its
// receive queue empty, which may not have happened since the connector
// opened.
func (cl *cluster) closest(f *readFilter) nodeSet {
	relaxed := *f
	relaxed.gtid, relaxed.since = monitor.GTIDSet{}, time.Time{}
	prim := cl.primary()
	best := time.Duration(-1)
	for _, n := range cl.nodes {
		if ok, _ := relaxed.eligible(n, n == prim || cl.galera && n.h.IsPrimary()); !ok || n.pool != relaxed.pool {
			continue
		}
		if lag, known := n.h.Lag(); known && lag < cl.cfg.CausalTimeout && (best < 0 || lag < best) {
			best = lag
		}
	}
	switch {
	case best >= 0:
		bound := min(best+cl.cfg.ProbeInterval, cl.cfg.CausalTimeout)
		if relaxed.maxLag <= 0 || bound < relaxed.maxLag {
			relaxed.maxLag = max(bound, 1) // 0 would mean no bound
		}
	case !cl.galera:
		return 0
	}
	set, _ := cl.qualifying(&relaxed, prim)
	if prim.index < maxNodes {
		set &^= 1 << uint(prim.index) // a weighted primary needs no wait
	}
	return set
}

// readFallback says why a read for which no replica qualifies goes to the
// primary: replicas are healthy but too far behind (the scope's last
// write, or the hint's lag bound), or none is healthy; or it refuses the
// read when configured to (FallbackError).
func (cl *cluster) readFallback(f *readFilter, anyHealthy bool, q string) (router.Reason, error) {
	switch {
	case anyHealthy && f.since.IsZero() && f.gtid.IsZero():
		return router.ReasonMaxLag, nil
	case anyHealthy:
		return router.ReasonReadYourWrites, nil
	case cl.starting():
		return router.ReasonStarting, nil
	case cl.cfg.Fallback == FallbackError:
		return router.ReasonNoHealthyReplica,
			routeErr(nil, router.ReasonNoHealthyReplica, q, ErrNoReplica)
	}
	return router.ReasonNoHealthyReplica, nil
}

// filter builds the read rules for one statement: its lag bound and pool,
// and what the read-your-writes scope of ctx requires.
func (c *conn) filter(ctx context.Context, h hint.Hint) readFilter {
	cfg := c.cl.cfg
	f := readFilter{maxLag: h.MaxLag, window: cfg.SessionWindow, probing: c.cl.probing, pool: c.cl.poolOf(h.Pool)}
	if h.Route == hint.ReplicaOK || cfg.Consistency == ConsistencyEventual {
		return f
	}
	s := c.scope(ctx)
	name := c.cl.partOf(s)
	causal := cfg.Consistency != ConsistencySession
	var unknown bool
	f.since, f.gtid, unknown = s.rule(name)
	switch {
	case cfg.Consistency == ConsistencyUniversal:
		// Every write acknowledged anywhere before the read began is in
		// a position of the primary fetched after it began. Without one
		// (the primary is away) the scope's own writes still bind.
		if g, ok := c.cl.freshPosition(ctx); ok {
			f.gtid = f.gtid.Union(g)
		}
	case causal && unknown && c.cl.position(ctx, s, name):
		// A write's GTID is unknown: the primary's position, read now on
		// a connection of its own, covers it.
		f.since, f.gtid, _ = s.rule(name)
	}
	if !causal {
		f.gtid = monitor.GTIDSet{}
	}
	if !f.since.IsZero() {
		f.now = time.Now()
	}
	return f
}

// route classifies a statement and decides where it goes, into r, and
// returns r; or, for a prepared statement that was routed before in the
// same connection state without a hint in the context, it returns what
// was decided then (stmt.routes), which nobody modifies.
func (c *conn) route(ctx context.Context, q string, ps *stmt, r *routed) (*routed, error) {
	c.rule = 0
	st := route.State{InTx: c.inTx(), Pinned: c.dirty}
	ch, hinted := c.hintOf(ctx)
	if ps != nil && !hinted && !c.broken {
		if kept := ps.kept(st); kept != nil {
			return kept, nil
		}
	}
	if c.broken {
		// The session was lost (and said so): on a fresh connection the
		// statement would run without its transaction or state. As from a
		// broken go-sql-driver connection, nothing is sent and
		// database/sql discards the connection.
		return nil, driver.ErrBadConn
	}
	if err := c.classify(q, ps, &r.cls); err != nil {
		return nil, hintErr(q, err)
	}
	if r.cls.Effect == route.Pin && r.cls.Statements == 1 {
		c.settleSet(q, &r.cls)
	}
	r.h = r.cls.Hint
	if hinted {
		r.h = hint.Merge(ch, r.cls.Hint)
	}
	r.d = route.Decide(r.cls, r.h, st)
	// What decides a read for a replica, and whether a node hint is
	// refused, can change from one execution to the next; the rest
	// depends on the text and the connection state alone.
	fixed := r.d.Target != route.ToReplica
	if !fixed {
		c.routeRead(q, r)
	}
	if r.h.Route == hint.NodeOnly && r.d.Pin {
		// A statement that pins goes to the primary connection it pins:
		// a hint aiming it elsewhere is refused, not ignored.
		fixed = false
		d := route.Decision{Target: route.ToNode, Node: r.h.Node, Reason: router.ReasonHintNode}
		if _, err := c.cl.namedNode(r.cls, d, q); err != nil {
			return nil, err
		}
	}
	if r.cls.Effect&heldEffects != 0 && !r.d.Pin && r.d.Target == route.ToPrimary {
		r.d.Pin = true // it runs on the held primary connection
	}
	if ps != nil && !hinted && fixed {
		ps.remember(st, r)
	}
	return r, nil
}

// commits reports a statement that may commit data, and so whose reply
// may carry a GTID: a write in autocommit, or what ends a transaction.
func (p *plan) commits(c *conn) bool {
	return p.r.cls.Effect&(route.TxEnd|route.AutocommitOn) != 0 || !c.inTx() && changesData(&p.r.cls)
}

// heldEffects are the effects of statements that run on the held primary
// connection, keep it, and leave reads to the replicas.
const heldEffects = route.PrimaryState | route.Lock | route.Unlock | route.TempTable | route.UserVars

// settleSet tells apart the session statements (route.Pin) that need no
// pinning: a SET only primary statements see (PrimaryState), one
// replayed on every backend connection (ReplayState), or an assignment
// of user variables whose values are read back and replayed (UserVars).
func (c *conn) settleSet(q string, cls *route.Class) {
	switch {
	case route.PrimaryOnlySet(q):
		cls.Effect = route.PrimaryState
	case !c.cl.replay || c.dirty:
	default:
		if _, ok := route.ReplayableSet(q); ok {
			cls.Effect = route.ReplayState
		} else if _, ok := route.AssignedVars(q); ok {
			cls.Effect = route.UserVars
		}
	}
}

// routeRead applies what else decides a read bound for a replica: a
// stored function or a primary-only text sends it to the primary; a pool
// rule (Config.PoolRules), decided with the classification, picks its
// pool when it names none itself.
func (c *conn) routeRead(q string, r *routed) {
	cls, h := &r.cls, &r.h
	if len(cls.Functions) > 0 && !c.cl.replicaSafe(cls.Functions) || c.cl.isPrimaryOnly(q) {
		r.d = route.Decision{Target: route.ToPrimary, Reason: router.ReasonStoredFunction}
		return
	}
	if h.Pool == "" && cls.Tag > 0 {
		c.rule = c.cl.poolRule(*cls)
		if c.rule > 0 {
			h.Pool = c.cl.cfg.rules[c.rule-1].pool
		}
	}
}

// classify puts the classifier's answer for q into cls; ps, the caller's
// prepared statement for q (nil for a text statement), keeps it after its
// first execution: the classifier's cache is looked up by the whole text.
func (c *conn) classify(q string, ps *stmt, cls *route.Class) error {
	if ps != nil && ps.classified {
		*cls = ps.cls
		return nil
	}
	var err error
	if *cls, err = c.cl.classifier.Classify(q); err == nil && ps != nil {
		ps.cls, ps.classified = *cls, true
	}
	return err
}

// namedNode resolves a hint.Node decision: the node must exist, and only a
// read may go to a replica.
func (cl *cluster) namedNode(cls route.Class, d route.Decision, q string) (*node, error) {
	n := cl.byName[d.Node]
	if n == nil {
		return nil, &RouteError{Node: d.Node, Reason: d.Reason.String(), Statement: quote(q),
			Err: fmt.Errorf("%w; nodes: %s", ErrUnknownNode, nodeNames(cl.cfg.Nodes))}
	}
	if !cl.isPrimary(n) && cls.Kind != route.Read {
		return nil, routeErr(n, d.Reason, q, ErrWriteToReplica)
	}
	return n, nil
}
