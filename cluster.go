package rwshard

import (
	"database/sql"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/balance"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/router"
)

// dbHandle is an existing pool given to OpenDB.
type dbHandle = *sql.DB

// node is one server as the router sees it at run time.
type node struct {
	name  string
	index int // in Config.Nodes
	db    *sql.DB
	owned bool // opened by rwshard, closed by Connector.Close
	// probeDB: the health probes' own connection to the node, allowing
	// multi-statement queries (see cluster.probe); nil over handles the
	// caller opened (OpenDB).
	probeDB *sql.DB

	h        *health.Node // probed state; up and unfenced when health is off
	inFlight atomic.Int64
	latency  balance.EWMA
	queries  atomic.Uint64 // statements sent
	errors   atomic.Uint64 // connection-class failures
	retries  atomic.Uint64 // reads retried elsewhere after failing here
	nodeProbeState
}

// cluster is the routing state shared by a Connector's connections.
type cluster struct {
	cfg        *Config
	nodes      []*node // in Config.Nodes order
	byName     map[string]*node
	mon        *health.Monitor // roles, health, lag; always present
	policy     balance.Policy  // bound to every node's name, in order
	weighted   bool            // built-in weighted policy: a primary with weight > 0 takes reads
	classifier *router.Classifier
	budget     *health.Budget
	cands      sync.Pool // *[]balance.Candidate, one per concurrent pick

	routes       [router.NumReasons]atomic.Uint64 // statements per final reason
	reads        atomic.Uint64                    // plain reads (Kind Read) routed
	primaryReads atomic.Uint64                    // of which the primary served
}

// count records a routed statement: its final reason, and the node that
// ran it (b is nil when it could not run anywhere).
func (cl *cluster) count(d router.Decision, cls router.Class, b *backend, err error) {
	cl.routes[d.Reason].Add(1)
	if b == nil {
		return
	}
	b.node.queries.Add(1)
	if err != nil && isBadConn(err) {
		b.node.errors.Add(1)
	}
	if cls.Kind == router.Read {
		cl.reads.Add(1)
		if cl.isPrimary(b.node) {
			cl.primaryReads.Add(1)
		}
	}
}

// primary returns the node currently taken as primary.
func (cl *cluster) primary() *node {
	i, _ := cl.mon.Primary()
	return cl.nodes[i]
}

func (cl *cluster) isPrimary(n *node) bool { return cl.primary() == n }

// readFilter is what a read requires of a replica beyond being up and
// unfenced.
type readFilter struct {
	maxLag  time.Duration  // from hint.MaxLag; 0: none
	since   time.Time      // the session's last write; zero: none
	gtid    health.GTIDSet // causal: must contain; zero: none
	exclude *node          // a node that just failed this read
	window  time.Duration  // when a replica's data horizon is unknown
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
	if !f.gtid.IsZero() && !n.h.Position().Contains(f.gtid) {
		return false, true
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
	ok, healthy = f.eligible(n, n == prim)
	if n == prim && cl.weighted && f.exclude != n && n.h.Up() && cl.cfg.Weights[n.name] > 0 {
		ok = true
	}
	return ok, healthy
}

// pickReader asks the policy for a node that passes f; nil when none does.
// anyHealthy reports whether some replica was healthy but excluded by f's
// consistency rules. A custom policy returning a bad index counts as no
// pick.
func (cl *cluster) pickReader(f *readFilter) (picked *node, anyHealthy bool) {
	prim := cl.primary()
	bp := cl.cands.Get().(*[]balance.Candidate)
	cands := (*bp)[:0]
	for _, n := range cl.nodes {
		ok, healthy := cl.readable(f, n, prim)
		anyHealthy = anyHealthy || healthy
		cands = append(cands, balance.Candidate{
			Name:     n.name,
			Usable:   ok,
			InFlight: n.inFlight.Load(),
			Latency:  n.latency.Value(),
		})
	}
	i := cl.policy.Pick(cands)
	if i >= 0 && i < len(cands) && cands[i].Usable {
		picked = cl.nodes[i]
	}
	*bp = cands
	cl.cands.Put(bp)
	return picked, anyHealthy
}

// starting reports that health has not probed every node once yet: right
// after the connector opened.
func (cl *cluster) starting() bool {
	if !cl.cfg.Health {
		return false
	}
	select {
	case <-cl.mon.Ready():
		return false
	default:
		return true
	}
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
