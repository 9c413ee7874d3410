package rwshard

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/balance"
	"github.com/rwshard/rwshard/internal/monitor"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// dbHandle is an existing pool given to OpenDB.
type dbHandle = *sql.DB

// node is one server as the router sees it at run time.
type node struct {
	name    string
	index   int       // in Config.Nodes
	db      *sql.DB   // a handle given to OpenDB; nil when rwshard opened the node
	conns   *connPool // rwshard's own pool of the node, when it opened it
	maxOpen int       // its pool's connection limit when rwshard opened it; 0: none
	// limited: its pool has a limit of connections (maxOpen, or a share
	// of the server's, Config.FleetSize).
	limited bool
	// probeDB: the health probes' own connection to the node, allowing
	// multi-statement queries (see cluster.probe); nil over handles the
	// caller opened (OpenDB).
	probeDB *sql.DB

	h    *monitor.Node // probed state; up and unfenced when health is off
	pool int           // its replica pool (Config.Pools): index in cluster.pools, 0 for none
	// galera: a Galera node, whose last probed position may count a
	// write-set not yet visible (see has); settled is the position its
	// probe before the last one read, seen, last the last one's.
	galera        bool
	settled, seen atomic.Pointer[monitor.GTIDSet]

	// What every statement that runs here counts, together, and apart
	// from the fields above that statements only read: cores that count
	// at once take these cache lines from each other.
	queries  atomic.Uint64 // statements sent
	stmts    stmtStats     // its connections' statement caches
	meters   nodeMeters    // latency histograms, server errors, causal waits
	inFlight atomic.Int64
	latency  balance.EWMA
	errors   atomic.Uint64 // connection-class failures
	retries  atomic.Uint64 // reads retried elsewhere after failing here
	reached  atomic.Bool   // a statement succeeded here once (see everReached)
	activeMu sync.Mutex
	active   map[*backendConn]struct{} // checked out now (see interrupt)

	// waited is the newest position a causal read waited for here
	// successfully: the node has it, whatever its last probe said.
	waited atomic.Pointer[monitor.GTIDSet]
	nodeProbeState
}

// cluster is the routing state shared by a Connector's connections.
type cluster struct {
	cfg        *Config
	nodes      []*node // in Config.Nodes order
	byName     map[string]*node
	mon        *monitor.Monitor // roles, health, lag; always present
	policy     balance.Policy   // bound to every node's name, in order
	weighted   bool             // built-in weighted policy: a primary with weight > 0 takes reads
	classifier *route.Classifier
	// tag is the classifier's tag function (Config.PoolRules), for the
	// units of sharded statements, which come classified; nil: none.
	tag    func(string, route.Class) int
	budget *monitor.Budget
	holds  *holdWatch // Config.HoldWarn, HoldLimit; nil: off
	// report: a statement is reported when it ends (Config.Tracer or
	// Config.RouteLog); ryw: Config.Consistency is not eventual. Derived
	// once, beside budget, which every statement reads too.
	report, ryw bool
	probing     bool          // health probes run: Config.Health, and more than one node
	galera      bool          // Config.Topology is TopologyGalera
	writerTurn  atomic.Uint32 // leastBusyWriter's turn among tied writers
	cands       sync.Pool     // *[]balance.Candidate, one per concurrent pick

	// safeFuncs: Config.ReplicaFunctions, lower case; anyFunc for "*".
	safeFuncs map[string]bool
	anyFunc   bool
	// primaryOnly remembers statement texts that a replica rejected as
	// read-only (a read that writes, through a stored function): they go
	// to the primary from then on. Bounded by maxPrimaryOnly.
	primaryOnly  sync.Map // string → struct{}
	nPrimaryOnly atomic.Int32

	// pools: "" (the default pool) then Config.Pools' names, sorted;
	// poolIdx maps a name to its index.
	pools   []string
	poolIdx map[string]int

	// replay: session variables are applied to backend connections
	// instead of pinning (route.ReplayableSet); rwshard's own pools only.
	replay bool

	// replays counts transactions replayed and refused (Config.TxReplay).
	replays struct{ done, refused atomic.Uint64 }

	// txTracer is Config.Tracer as a TxTracer, if it is one.
	txTracer TxTracer

	// global is the read-your-writes scope of statements whose context
	// carries no Session: the process's scope of the cluster once the
	// probes have named its primary (join), the connector's own (own)
	// until then.
	global atomic.Pointer[Session]
	own    Session
	joined atomic.Pointer[string] // the identity whose scope global is
	// positions fetches the primary's position for universal reads.
	positions positions

	// started: the monitor's first round of probes is done (awaitStart).
	started atomic.Bool
	// pinned counts the logical connections pinned to their primary
	// connection by session state that cannot be replayed (conn.dirty).
	pinned atomic.Int64

	routes       [router.NumReasons]atomic.Uint64 // statements per final reason
	reads        atomic.Uint64                    // plain reads (Kind Read) routed
	primaryReads atomic.Uint64                    // of which the primary served
}

// account records an execution that was planned, whether it ran or
// failed: its final reason, and, if it reached a node, whether it was a
// plain read and the primary served it, and its latency there. The
// attempts it sent are counted per node as they are made (exe.runOn).
func (cl *cluster) account(e *exe, p *plan, took time.Duration) {
	cl.routes[e.final].Add(1)
	n := e.node()
	if n == nil {
		return
	}
	kind := p.r.cls.Kind
	if kind == route.Read {
		cl.reads.Add(1)
		if cl.isPrimary(n) {
			cl.primaryReads.Add(1)
		}
	}
	n.meters.latency(kind, took)
}

// counted adds stmts statements routed for reason and run on n, of which
// reads were plain reads and primaryReads of those on the primary: count's
// and the short path's tally's (flushTally) one way to the counters.
func (cl *cluster) counted(reason router.Reason, n *node, stmts, reads, primaryReads uint64) {
	cl.routes[reason].Add(stmts)
	n.queries.Add(stmts)
	if reads > 0 {
		cl.reads.Add(reads)
	}
	if primaryReads > 0 {
		cl.primaryReads.Add(primaryReads)
	}
}

// scope is the read-your-writes scope of ctx: its Session, else the
// connector's. It inlines: while no session has been made (see
// SessionFrom), every write of a transaction asks it, and it answers
// with one load.
func (cl *cluster) scope(ctx context.Context) *Session {
	if !sessionsMade.Load() {
		return cl.global.Load()
	}
	return cl.scopeOf(ctx)
}

// scopeOf is scope once a session has been made, out of line so that
// scope inlines.
//
//go:noinline
func (cl *cluster) scopeOf(ctx context.Context) *Session {
	if s := sessionFrom(ctx); s != nil {
		return s
	}
	return cl.global.Load()
}

// scopes are the read-your-writes scopes of this process, one per
// replication cluster, keyed by the identity of its primary (see
// nodeProbeState.identity): every *sql.DB opened on a cluster shares it,
// whatever the rest of its DSN says, so that a second handle (a second
// gorm.Open, a migration tool beside the service) reads the first one's
// writes. A scope lives while a connector uses it: a cluster rebuilt later
// at the same address, with the same names, numbers its GTIDs afresh and
// must not inherit the old one's.
var scopes struct {
	mu sync.Mutex
	m  map[string]*sharedScope
}

// sharedScope is one entry of scopes.
type sharedScope struct {
	s     *Session
	users int // connectors joined to it
}

// join makes the scope of the cluster whose primary is n the connector's
// scope, once n's identity is known, bringing into it what the
// connector's scope held. A switchover joins the new primary's scope the
// same way: the GTIDs carry over.
func (cl *cluster) join(n *node) {
	id := n.identity.Load()
	if id == nil {
		return
	}
	if cur := cl.joined.Load(); cur != nil && *cur == *id {
		return
	}
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	if scopes.m == nil {
		scopes.m = map[string]*sharedScope{}
	}
	e := scopes.m[*id]
	if e == nil {
		e = &sharedScope{s: &Session{}}
		scopes.m[*id] = e
	}
	e.users++
	if cur := cl.joined.Swap(id); cur != nil {
		leaveScope(*cur)
	}
	cl.own.next.Store(e.s) // from now on, what the connector's scope records reaches e.s too
	if old := cl.global.Swap(e.s); old != e.s {
		e.s.absorb(old)
	}
}

// leave gives up the connector's place in its shared scope, when it closes.
func (cl *cluster) leave() {
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	if cur := cl.joined.Swap(nil); cur != nil {
		leaveScope(*cur)
	}
}

// leaveScope counts one connector out of scope id, and forgets the scope
// when none is left. scopes.mu is held.
func leaveScope(id string) {
	if e := scopes.m[id]; e != nil {
		if e.users--; e.users == 0 {
			delete(scopes.m, id)
		}
	}
}

// partOf is the part of session s that holds this cluster's writes:
// Config.DataSource's, or, for the connector's own scope (its cluster's
// alone), the unnamed one.
func (cl *cluster) partOf(s *Session) string {
	if s == cl.global.Load() || s == &cl.own {
		return ""
	}
	return cl.cfg.DataSource
}

// primary returns the node currently taken as primary.
func (cl *cluster) primary() *node { return cl.nodes[cl.mon.PrimaryIndex()] }

// leastBusyWriter is, with several Galera writers (Config.Galera.MaxWriters), the
// one up with the fewest connections checked out (held ones included),
// ties taken in turn; w, the writer, when no other is usable.
func (cl *cluster) leastBusyWriter(w *node) *node {
	best := w
	bestLoad := int64(-1)
	start := int(cl.writerTurn.Add(1))
	for k := range cl.nodes {
		n := cl.nodes[(start+k)%len(cl.nodes)]
		if n != w && !(n.h.IsPrimary() && n.h.Up() && !n.h.Fenced()) {
			continue
		}
		if load := n.inFlight.Load(); bestLoad < 0 || load < bestLoad {
			best, bestLoad = n, load
		}
	}
	return best
}

// isPrimary reports whether n is the node taken as primary, from n's own
// health state (monitor.Node.IsPrimary): no read of the monitor's.
func (cl *cluster) isPrimary(n *node) bool { return n.h.IsPrimary() }

// readFilter is what a read requires of a replica beyond being up and
// unfenced.
type readFilter struct {
	pool    int             // the replica pool the read may use (node.pool); -1: unknown pool
	maxLag  time.Duration   // from hint.MaxLag; 0: none
	since   time.Time       // the session's last write; zero: none
	gtid    monitor.GTIDSet // causal: must contain; zero: none
	exclude *node           // a node that just failed this read
	window  time.Duration   // when a replica's data horizon is unknown
	now     time.Time
	probing bool // health is on: a replica not probed yet is no candidate
}

// eligible applies the health and consistency rules to one node.
// healthy reports the health part alone, to tell a fallback for lack of
// healthy replicas from one for consistency.
func (f *readFilter) eligible(n *node, isPrimary bool) (ok, healthy bool) {
	if isPrimary || n == f.exclude || !n.h.Up() || n.h.Fenced() || f.probing && !n.h.Probed() {
		return false, false
	}
	if f.maxLag > 0 {
		if lag, known := n.h.Lag(); !known || lag > f.maxLag {
			return false, true
		}
	}
	if !f.gtid.IsZero() {
		// Causal: the GTID decides; the time horizon would lag a probe
		// interval behind it.
		return n.has(f.gtid), true
	}
	if !f.since.IsZero() {
		asOf, known := n.h.DataAsOf()
		if known && asOf.Before(f.since) || !known && f.now.Sub(f.since) < f.window {
			return false, true
		}
	}
	return true, true
}

// readable is eligible for node n of cl (prim its primary): with the
// built-in weighted policy a primary with a weight above 0 takes its
// share of reads as well.
func (cl *cluster) readable(f *readFilter, n, prim *node) (ok, healthy bool) {
	if n.pool != f.pool && n != prim {
		return false, false // another pool's replica: not this read's
	}
	// Several Galera writers (Config.Galera.MaxWriters) serve no reads either.
	ok, healthy = f.eligible(n, n == prim || cl.galera && n.h.IsPrimary())
	if n == prim && f.pool == 0 && cl.weighted && f.exclude != n && n.h.Up() && cl.cfg.Weights[n.name] > 0 {
		ok = true
	}
	return ok, healthy
}

// poolUnavailable reports, for a pooled read that no replica passed,
// that its pool cannot serve it (its replicas down, fenced or over the
// lag bound): the read goes where Config.PoolFallback says. A pool whose
// replicas are healthy but do not have the scope's last write yet serves
// it as the default pool does: a causal wait on the pool's replica
// closest to it, else the primary (read-your-writes), never another
// pool's replicas.
func (f *readFilter) poolUnavailable(anyHealthy bool) bool {
	return f.pool > 0 && !(anyHealthy && (!f.gtid.IsZero() || !f.since.IsZero()))
}

// pick asks the policy for one of the nodes in set that is still up;
// nil when it picks none (a custom policy returning a bad index counts as
// no pick).
func (cl *cluster) pick(set nodeSet) *node {
	bp := cl.cands.Get().(*[]balance.Candidate)
	cands := (*bp)[:0]
	for i, n := range cl.nodes {
		cands = append(cands, balance.Candidate{
			Name:     n.name,
			Usable:   set.has(i) && n.h.Up(),
			InFlight: n.inFlight.Load(),
			Latency:  n.latency.Value(),
		})
	}
	var picked *node
	i := cl.policy.Pick(cands)
	if i >= 0 && i < len(cands) && cands[i].Usable {
		picked = cl.nodes[i]
	}
	*bp = cands
	cl.cands.Put(bp)
	return picked
}

// mostAdvanced is the replica, up and not in excl, with the least lag
// (the first such with its lag unknown, if none is known): where a read
// goes while the primary is away. Nil when no replica is up.
func (cl *cluster) mostAdvanced(excl nodeSet) *node {
	var best *node
	bestLag := time.Duration(-1)
	for i, n := range cl.nodes {
		if excl.has(i) || !n.h.Up() || cl.probing && !n.h.Probed() {
			continue
		}
		lag, known := n.h.Lag()
		switch {
		case best == nil:
			best = n
			if known {
				bestLag = lag
			}
		case known && (bestLag < 0 || lag < bestLag):
			best, bestLag = n, lag
		}
	}
	return best
}

// bounded reports a node whose pool has a connection limit.
func (n *node) bounded() bool {
	if n.limited {
		return true
	}
	return n.db != nil && n.db.Stats().MaxOpenConnections > 0 // a handle given to OpenDB
}

// poolStats reports the node's backend pool.
func (n *node) poolStats() sql.DBStats {
	if n.conns != nil {
		return n.conns.stats()
	}
	return n.db.Stats()
}

// statementDB is a database/sql handle on the node for rwshard's own
// statements outside any session (the heartbeat write): the caller's
// handle, or the probes' pool.
func (n *node) statementDB() *sql.DB {
	if n.db != nil {
		return n.db
	}
	return n.probeDB
}

// track records a backend connection checked out of n's pool, or back.
func (n *node) track(bc *backendConn, out bool) {
	n.activeMu.Lock()
	if out {
		if n.active == nil {
			n.active = make(map[*backendConn]struct{})
		}
		n.active[bc] = struct{}{}
	} else {
		delete(n.active, bc)
	}
	n.activeMu.Unlock()
}

// interrupt is the monitor's news that node i went out of rotation: every
// statement in flight there is interrupted (its socket closed), so that no
// caller waits on a node that went silent. A read that returned no rows
// yet is then retried elsewhere; a write gets ErrOutcomeUnknown.
func (cl *cluster) interrupt(i int) {
	n := cl.nodes[i]
	if n.conns != nil {
		n.conns.slowStart() // its connections come back ramped (dialramp.go)
	}
	n.activeMu.Lock()
	defer n.activeMu.Unlock()
	for bc := range n.active {
		bc.interrupt()
	}
}

// maxPrimaryOnly bounds cluster.primaryOnly.
const maxPrimaryOnly = 1024

// replicaSafe reports whether a read calling funcs may run on a replica.
func (cl *cluster) replicaSafe(funcs []string) bool {
	if cl.anyFunc {
		return true
	}
	for _, f := range funcs {
		if !cl.safeFuncs[f] {
			return false
		}
	}
	return true
}

// isPrimaryOnly reports a statement a replica rejected as read-only.
func (cl *cluster) isPrimaryOnly(q string) bool {
	if cl.nPrimaryOnly.Load() == 0 {
		return false
	}
	_, ok := cl.primaryOnly.Load(q)
	return ok
}

// rememberPrimaryOnly records such a statement (up to maxPrimaryOnly).
func (cl *cluster) rememberPrimaryOnly(q string) {
	if cl.nPrimaryOnly.Load() < maxPrimaryOnly {
		if _, loaded := cl.primaryOnly.LoadOrStore(q, struct{}{}); !loaded {
			cl.nPrimaryOnly.Add(1)
		}
	}
}

// has reports whether n is known to have applied g: from its last probe,
// or from a causal read that waited for g (or a later position) here. A
// Galera node's @@gtid_binlog_pos counts a write-set once binlogged, a
// moment before its commit is visible: there the probe before the last
// one speaks, a probe interval later.
func (n *node) has(g monitor.GTIDSet) bool {
	if n.galera {
		if s := n.settled.Load(); s != nil && s.Contains(g) {
			return true
		}
	} else if n.h.Position().Contains(g) {
		return true
	}
	w := n.waited.Load()
	return w != nil && w.Contains(g)
}

// applied records that n has applied g (a wait for it succeeded).
func (n *node) applied(g monitor.GTIDSet) {
	for {
		old := n.waited.Load()
		next := g
		if old != nil {
			if old.Contains(g) {
				return
			}
			next = old.Union(g)
		}
		if n.waited.CompareAndSwap(old, &next) {
			return
		}
	}
}

// starting reports that health has not probed every node once yet: right
// after the connector opened.
func (cl *cluster) starting() bool {
	if !cl.probing || cl.started.Load() {
		return false
	}
	select {
	case <-cl.mon.Ready():
		cl.started.Store(true)
		return false
	default:
		return true
	}
}

// awaitStart waits, at most ConnectTimeout, for the monitor's first round of
// probes, so that the first statements after the connector opened see the
// roles and lags (reads on replicas, writes on the primary the probes
// found) instead of taking the first host for the primary. Open itself
// dials nothing.
func (cl *cluster) awaitStart(ctx context.Context) {
	if !cl.probing {
		cl.started.Store(true)
		return
	}
	t := time.NewTimer(cl.cfg.ConnectTimeout)
	defer t.Stop()
	select {
	case <-cl.mon.Ready():
		cl.started.Store(true)
	case <-t.C:
	case <-ctx.Done():
	}
}

// awaitNews waits up to wait for the monitor to report a change of the
// primary; it fails only when ctx ends.
func (cl *cluster) awaitNews(ctx context.Context, wait time.Duration) error {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-cl.mon.Changed():
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// observe records the latency of a statement that started at start (see
// monotonic) on its node.
func (n *node) observe(start time.Duration) { n.latency.Observe(monotonic() - start) }

// clockBase anchors monotonic.
var clockBase = time.Now()

// monotonic reads the monotonic clock alone: time.Since of a time with a
// monotonic reading does not read the wall clock, so it costs about half
// of time.Now on the statement path.
func monotonic() time.Duration { return time.Since(clockBase) }

// poolFallback moves a pooled read for which no replica of its pool
// qualifies to where Config.PoolFallback says: another pool (f.pool
// changes; the caller picks again), the primary (toPrimary), or an error
// naming the pool.
func (cl *cluster) poolFallback(f *readFilter, q string) (toPrimary bool, err error) {
	pool := cl.pools[f.pool]
	switch fb := cl.cfg.PoolFallback; fb {
	case "primary":
		return true, nil
	case "error":
		return false, &RouteError{Reason: "pool " + pool, Statement: quote(q),
			Err: fmt.Errorf("%w in pool %s (rwshard.poolFallback=error)", ErrNoReplica, pool)}
	case "default":
		f.pool = 0
	default:
		if i := cl.poolIdx[fb]; i != f.pool {
			f.pool = i
		} else {
			return true, nil
		}
	}
	return false, nil
}

// poolOf resolves a pool hint: 0 for none, -1 for a name that is no pool.
func (cl *cluster) poolOf(name string) int {
	if name == "" {
		return 0
	}
	if i, ok := cl.poolIdx[name]; ok {
		return i
	}
	return -1
}

// unknownPool refuses a read hinted to a pool that does not exist.
func (cl *cluster) unknownPool(q string) error {
	return &RouteError{Reason: "pool", Statement: quote(q),
		Err: fmt.Errorf("%w; pools: %s", ErrUnknownPool, strings.Join(cl.pools[1:], ", "))}
}
