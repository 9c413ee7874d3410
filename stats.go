package rwshard

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/rwshard/rwshard/router"
)

// NodeStats is one node as the router sees it now.
type NodeStats struct {
	Name     string
	Primary  bool // the node currently taken as primary
	Up       bool // in rotation: probes answer, traffic does not fail
	Fenced   bool // a replica over the lag limit or with replication stopped
	Lag      time.Duration
	LagKnown bool
	InFlight int64
	Latency  time.Duration // EWMA of statement latency
	Queries  uint64        // statements sent to the node
	Errors   uint64        // connection-class failures on real traffic
	Retries  uint64        // reads that failed here and were retried elsewhere
	// The statement caches of the node's connections: executions that
	// found their statement prepared (hits), that had to prepare it
	// (misses), and statements closed to make room (evictions).
	StmtHits, StmtMisses, StmtEvictions uint64
	// ReadLatency and WriteLatency are the times statements took on the
	// node until they returned (rows not yet read), causal waits and
	// retries included, in LatencyBounds() buckets: plain reads, and every
	// other statement (writes, locking reads, session statements).
	// Every statement is counted. Of the prepared statements run again
	// inside a BeginTx transaction (counted at its end, as below), about
	// one in 16, at random, is timed, and the others are counted at the
	// duration of their connection's last timed statement of their class
	// on the node: for those statements the buckets and sums are
	// estimates, the counts exact (each timed statement costs two clock
	// reads).
	ReadLatency, WriteLatency Histogram
	// ServerErrors counts the errors the node's server returned to
	// statements, by MySQL error number (1062 duplicate key, 1213
	// deadlock, 1290 read-only, …); nil before the first.
	ServerErrors map[uint16]uint64
	// Causal reads that waited on the node for their session's GTID, of
	// which timed out (and went to the primary), and the time they waited.
	Waits, WaitTimeouts uint64
	WaitTime            time.Duration
	// Pool is the node's connection pool as database/sql reports it (open,
	// in use, idle, waits), the caller's own pool under OpenDB.
	Pool sql.DBStats
}

// Stats is a snapshot of the cluster: the visible record of where
// statements went and why.
type Stats struct {
	Nodes []NodeStats
	// Routes counts statements by the final reason of their routing
	// decision (router.Reason names: "replica", "write", "locking-read",
	// "read-your-writes", "no-healthy-replica", …).
	Routes map[string]uint64
	// Reads counts plain reads; PrimaryReads those the primary served
	// (fallbacks, read-your-writes, hints, max-lag). A router that sends
	// too many reads to the primary has failed its purpose: watch
	// PrimaryReadShare.
	Reads, PrimaryReads uint64
	PrimaryReadShare    float64
	// Pinned is the number of logical connections pinned to their primary
	// connection now by session state that cannot be replayed (USE,
	// PREPARE, LOCK TABLES, a SET of a variable rwshard does not know, …):
	// every statement of theirs runs there until they are closed or
	// reset (Config.ResetSession).
	Pinned int64
	// LongHolds is the number of logical connections holding a backend
	// connection (a transaction, or a result set not closed) for longer
	// than Config.HoldWarn now; HoldTimes are the times of every such hold
	// that ended, short or long, in HoldBounds() buckets. Both stay zero
	// with HoldWarn and HoldLimit off.
	LongHolds int64
	HoldTimes Histogram
	// Fallbacks: reads sent to the primary because no replica qualified.
	Fallbacks uint64
	// PositionQueries: reads of the primary's GTID position for
	// read-your-writes (a universal read's, shared by the reads that
	// arrive together; a causal read's after a write of unknown GTID).
	PositionQueries uint64
	// Retries made and refused by the retry budget.
	Retries, RetriesRefused uint64
	// Transactions replayed after their connection was lost, and those
	// that could not be (Config.TxReplay).
	Replays, ReplaysRefused uint64
	// Events counts health and routing events by kind name ("node-down",
	// "split-brain", …; health.EventKind's String), repeats included.
	Events map[string]uint64
}

// Stats returns a snapshot of the connector's nodes. A sharded connector
// reports the nodes of every data source (named <ds>-primary,
// <ds>-replica1, …) and sums the counters.
//
// The counters of a prepared statement run again inside a BeginTx
// transaction (go-tpc's shape: statements prepared once per connection,
// executed in every transaction) are added
// when its transaction ends, or after every 64 such statements of one
// connection: a snapshot taken while a transaction runs may not have its
// latest statements yet. A failed statement is counted at once.
func (c *Connector) Stats() Stats {
	s := Stats{Routes: map[string]uint64{}, Events: map[string]uint64{}}
	for _, cl := range c.clusters() {
		cl.addStats(&s)
	}
	if s.Reads > 0 {
		s.PrimaryReadShare = float64(s.PrimaryReads) / float64(s.Reads)
	}
	return s
}

// clusters returns the connector's clusters: one, or one per data source
// in name order.
func (c *Connector) clusters() []*cluster {
	if c.sh == nil {
		return []*cluster{c.cl}
	}
	var out []*cluster
	for _, dc := range c.sh.DataSources() {
		out = append(out, dc.clusters()...)
	}
	return out
}

func (cl *cluster) addStats(s *Stats) {
	prim := cl.primary()
	for _, n := range cl.nodes {
		lag, known := n.h.Lag()
		s.Nodes = append(s.Nodes, NodeStats{
			Name: n.name, Primary: n == prim, Up: n.h.Up(), Fenced: n.h.Fenced(),
			Lag: lag, LagKnown: known, InFlight: n.inFlight.Load(), Latency: n.latency.Value(),
			Queries: n.queries.Load(), Errors: n.errors.Load(), Retries: n.retries.Load(),
			StmtHits: n.stmts.hits.Load(), StmtMisses: n.stmts.misses.Load(), StmtEvictions: n.stmts.evictions.Load(),
			ReadLatency: n.meters.reads.snapshot(), WriteLatency: n.meters.writes.snapshot(),
			ServerErrors: n.meters.serverErrors(),
			Waits:        n.meters.waits.Load(), WaitTimeouts: n.meters.waitTimeouts.Load(),
			WaitTime: time.Duration(n.meters.waitNanos.Load()), Pool: n.poolStats(),
		})
	}
	for k, v := range cl.mon.EventCounts() {
		s.Events[k.String()] += v
	}
	for r := range router.NumReasons {
		if v := cl.routes[r].Load(); v > 0 {
			s.Routes[r.String()] += v
		}
	}
	s.Reads += cl.reads.Load()
	s.PrimaryReads += cl.primaryReads.Load()
	s.Pinned += cl.pinned.Load()
	if h := cl.holds; h != nil {
		s.LongHolds += h.long.Load()
		s.HoldTimes.add(h.snapshot())
	}
	s.Fallbacks += cl.routes[router.ReasonNoHealthyReplica].Load()
	s.PositionQueries += cl.positions.queries.Load()
	s.Replays += cl.replays.done.Load()
	s.ReplaysRefused += cl.replays.refused.Load()
	r, refused := cl.budget.Counts()
	s.Retries += r
	s.RetriesRefused += refused
}

var errNotRwshard = errors.New("rwshard: not an rwshard *sql.DB")

// ConnectorOf returns the rwshard Connector behind db, which may come from
// sql.Open("rwshard", …), sql.OpenDB(connector) or OpenDB. It takes no
// connection and does no I/O.
func ConnectorOf(ctx context.Context, db *sql.DB) (*Connector, error) {
	if d, ok := db.Driver().(*Driver); ok && d.c != nil {
		return d.c, nil
	}
	return nil, errNotRwshard
}
