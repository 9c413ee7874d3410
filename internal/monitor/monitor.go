package monitor

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/rwshard/rwshard/health"
)

// Reading is what one probe read from a node.
type Reading struct {
	ReadOnly bool
	// Replica: the node has replica status (SHOW REPLICA/SLAVE STATUS
	// returned a row).
	Replica   bool
	IORunning bool
	// IOConnecting: the IO thread is trying to reach its primary
	// (Slave_IO_Running: Connecting, or Preparing on MariaDB), as while the
	// primary is down or just after START SLAVE. Not a
	// fence by itself: the replica still has everything the primary had
	// when it was last reached, and the GTID lag says whether that is old.
	IOConnecting bool
	SQLRunning   bool
	// SecondsBehind is Seconds_Behind_Master, or -1 when NULL. It can read
	// 0 on a delayed or idle replica: rwshard never trusts it alone.
	SecondsBehind int64
	// Position is the node's GTID position: what a primary has binlogged
	// (@@gtid_binlog_pos), what a replica has applied (@@gtid_slave_pos).
	Position GTIDSet
	// GTIDs: positions are kept by the server even when empty (MariaDB
	// always; MySQL with gtid_mode on), so an empty one means "no
	// transaction yet", not "unknown".
	GTIDs bool
	// Heartbeat is the newest pt-heartbeat row seen on the node; zero if
	// no heartbeat table is read.
	Heartbeat time.Time
	// Galera is the node's wsrep state, read when the monitor watches a
	// Galera cluster (Options.Galera); nil otherwise.
	Galera *Wsrep
}

// Wsrep is a Galera node's state, from its wsrep status and variables.
type Wsrep struct {
	Ready         bool   // wsrep_ready
	LocalState    int    // wsrep_local_state: 1 Joining, 2 Donor/Desynced, 3 Joined, 4 Synced
	Desync        bool   // @@wsrep_desync
	RejectQueries string // @@wsrep_reject_queries: NONE, ALL, ALL_KILL
	ClusterStatus string // wsrep_cluster_status: Primary, non-Primary, Disconnected
	LocalIndex    int    // wsrep_local_index: the node's place in the view, the same in every node's view
	RecvQueue     int64  // wsrep_local_recv_queue: write-sets received, not yet applied
}

// Wsrep local states.
const (
	WsrepJoining = 1
	WsrepDonor   = 2 // Donor/Desynced
	WsrepJoined  = 3
	WsrepSynced  = 4
)

// GaleraOptions make the monitor watch a Galera cluster: every node is
// writable, and the monitor names one writer (the node it calls the
// primary) that every process with the same options names alike, from the
// nodes' own states, without talking to each other.
type GaleraOptions struct {
	// Donor lets a node that is a state-transfer donor (wsrep_local_state 2
	// with wsrep_desync OFF) serve; by default it does not.
	Donor bool
	// Priority lists node indexes, most preferred first: the writer is the
	// first serving node of the list (nodes not listed after, by
	// wsrep_local_index). Empty: the serving node with the lowest
	// wsrep_local_index.
	Priority []int
	// NoFailback keeps the writer while it serves, even when a node the
	// rule prefers serves again.
	NoFailback bool
	// MaxRecvQueue fences a node for reads while more write-sets than this
	// wait in its receive queue (wsrep_local_recv_queue); 0: no limit.
	MaxRecvQueue int64
	// MaxWriters is how many serving nodes take writes (Node.IsPrimary),
	// the writer and the next by preference; 0 or 1: the writer alone.
	MaxWriters int
}

// serving says whether a Galera node may take statements, and if not why
// (the fence cause). down: it is out of the Primary component, or not
// ready, which the application would see as error 1047.
func (o *GaleraOptions) serving(w *Wsrep) (ok, down bool, why string) {
	switch {
	case w.ClusterStatus != "Primary":
		return false, true, "wsrep_cluster_status " + w.ClusterStatus
	case !w.Ready:
		return false, true, "wsrep_ready OFF"
	case w.Desync:
		return false, false, "desynced"
	case w.RejectQueries != "" && !strings.EqualFold(w.RejectQueries, "NONE"):
		return false, false, "wsrep_reject_queries " + w.RejectQueries
	case w.LocalState == WsrepSynced:
		return true, false, ""
	case w.LocalState == WsrepDonor && o.Donor:
		return true, false, ""
	case w.LocalState == WsrepDonor:
		return false, false, "donor"
	default:
		return false, false, "wsrep_local_state " + strconv.Itoa(w.LocalState)
	}
}

// ProbeFunc probes node i once. It must honour ctx (the probe timeout).
type ProbeFunc func(ctx context.Context, i int) (Reading, error)

// Options configure a Monitor. Zero values take the defaults.
type Options struct {
	Interval  time.Duration // between probes of a node; default 1s
	Timeout   time.Duration // of one probe; default 500ms
	FailAfter int           // consecutive traffic failures that take a node out; default 3
	MaxLag    time.Duration // replicas above are fenced; 0: no limit
	// Window folds repeated events (default 10s).
	Window   time.Duration
	Observer health.Observer
	// Beat, when set, is called every interval: the driver writes the
	// heartbeat row on the primary there.
	Beat func(ctx context.Context) error
	// Now is the clock (tests).
	Now func() time.Time
	// Galera, when set, watches a Galera cluster (see GaleraOptions);
	// readings then carry Reading.Galera.
	Galera *GaleraOptions
	// Down, when set, is called with a node's index when it goes out of
	// rotation (a probe failed, or traffic failed FailAfter times): the
	// driver interrupts the statements in flight there.
	Down func(i int)
}

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.FailAfter <= 0 {
		o.FailAfter = 3
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Node is the monitored state of one node. Its methods are cheap atomic
// reads, meant for the statement path.
type Node struct {
	Name string

	up        atomic.Bool
	primary   atomic.Bool // taken as primary (see IsPrimary)
	fenced    atomic.Bool
	writable  atomic.Bool  // read_only=OFF and not replicating
	replica   atomic.Bool  // has replica status
	lag       atomic.Int64 // nanoseconds; -1 unknown
	asOf      atomic.Int64 // unix nanos: has everything the primary committed before; 0 unknown
	probed    atomic.Bool  // at least one probe answered
	seen      atomic.Bool  // a probe answered or failed once (see setUp)
	failures  atomic.Int32 // consecutive traffic failures
	position  atomic.Pointer[GTIDSet]
	lastError atomic.Pointer[error]

	fenceCause string // owned by the node's probe loop

	rejectedAt atomic.Int64 // unix nanos of the last read-only rejection

	wsrepIndex atomic.Int32 // Galera: wsrep_local_index as last probed; -1 unknown
}

// IsPrimary reports whether the node is the one taken as primary
// (Monitor.PrimaryIndex), usable or not: one load from the node's own
// state, which a statement holding a connection to the node reads
// anyway, where PrimaryIndex reads the monitor's. When the primary
// moves, the new node is marked before PrimaryIndex names it and the old
// one cleared after: for that moment both report true, as a check made
// just before the move would have.
func (n *Node) IsPrimary() bool { return n.primary.Load() }

// Up reports whether the node is in rotation: a probe answered (once
// the monitor started), its last probe did, and traffic has not failed
// FailAfter times in a row since.
func (n *Node) Up() bool { return n.up.Load() }

// Fenced reports a replica over the lag limit or with replication stopped.
func (n *Node) Fenced() bool { return n.fenced.Load() }

// Writable reports read_only=OFF without replica status, as last probed.
func (n *Node) Writable() bool { return n.writable.Load() }

// Lag is the replica's lag estimate; ok is false when unknown.
func (n *Node) Lag() (time.Duration, bool) {
	l := n.lag.Load()
	return time.Duration(l), l >= 0
}

// DataAsOf is the time before which everything committed on the primary is
// known to be on this node; ok is false when unknown.
func (n *Node) DataAsOf() (time.Time, bool) {
	t := n.asOf.Load()
	return time.Unix(0, t), t > 0
}

// Position is the node's last probed GTID position.
func (n *Node) Position() GTIDSet {
	if p := n.position.Load(); p != nil {
		return *p
	}
	return GTIDSet{}
}

// Probed reports whether any probe has answered yet.
func (n *Node) Probed() bool { return n.probed.Load() }

// LastError is the error of the node's last probe if that probe failed,
// else nil.
func (n *Node) LastError() error {
	if p := n.lastError.Load(); p != nil {
		return *p
	}
	return nil
}

// sample is the primary's position at the time its probe was sent.
type sample struct {
	at  time.Time
	pos GTIDSet
}

// maxSamples bounds the primary position history (with the default
// interval, two minutes: lag beyond that reads as that much).
const maxSamples = 120

// Monitor probes every node on an interval, tracks health, lag and roles,
// and raises events. It owns its goroutines: Start starts them, Close stops
// them and waits.
type Monitor struct {
	opts  Options
	nodes []*Node
	probe ProbeFunc
	agg   *aggregator

	primary   atomic.Int32 // index of the node taken as primary
	split     atomic.Bool  // more than one writable node
	primaryOK atomic.Bool  // as last evaluated: PrimaryLost/PrimaryFound on change

	mu      sync.Mutex
	samples []sample      // primary positions, oldest first
	changed chan struct{} // closed and replaced on every role change
	kick    []chan struct{}
	// writerChosen: a Galera writer was chosen once every node had been
	// probed (NoFailback keeps that one, not the index New started with
	// nor one chosen before the others answered).
	writerChosen bool

	stop   chan struct{}
	ctx    context.Context // of every probe; cancelled by Close
	cancel context.CancelFunc
	first  sync.WaitGroup // first probe of every node
	ready  chan struct{}  // closed when first is done
	// primaryFirst is closed after the primary's first probe (see loop).
	primaryFirst chan struct{}
	// epoch is when Start ran: every loop ticks at epoch + k×Interval
	// (see untilTick).
	epoch   time.Time
	loops   sync.WaitGroup // probe loops and heartbeat writer
	deliver sync.WaitGroup // event delivery
	started atomic.Bool
	closed  atomic.Bool
}

// New returns a monitor of the named nodes; nodes[primary] is taken as the
// primary until probes say otherwise. Nodes start up, unfenced, lag
// unknown.
func New(names []string, primary int, probe ProbeFunc, o Options) *Monitor {
	o.defaults()
	m := &Monitor{opts: o, probe: probe, agg: newAggregator(o.Window, o.Now),
		changed: make(chan struct{}), stop: make(chan struct{}), ready: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, name := range names {
		n := &Node{Name: name}
		n.up.Store(true)
		n.lag.Store(-1)
		n.wsrepIndex.Store(-1)
		m.nodes = append(m.nodes, n)
		m.kick = append(m.kick, make(chan struct{}, 1))
	}
	m.primary.Store(int32(primary))
	m.nodes[primary].primary.Store(true)
	m.nodes[primary].writable.Store(true)
	m.primaryOK.Store(true)
	return m
}

// Node returns node i's state.
func (m *Monitor) Node(i int) *Node { return m.nodes[i] }

// Primary returns the index of the node taken as primary, and whether it is
// usable for writes: up, writable as last probed, and no split brain.
func (m *Monitor) Primary() (int, bool) {
	i := int(m.primary.Load())
	n := m.nodes[i]
	return i, n.up.Load() && n.writable.Load() && !m.split.Load()
}

// PrimaryIndex is the index of the node taken as primary, usable or not:
// Primary without the health check, one atomic load.
func (m *Monitor) PrimaryIndex() int { return int(m.primary.Load()) }

// SplitBrain reports more than one writable node.
func (m *Monitor) SplitBrain() bool { return m.split.Load() }

// Changed returns a channel closed at the next change of primary, primary
// health or split-brain state: writes waiting for the primary select on it.
func (m *Monitor) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *Monitor) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Emit raises an event from outside the monitor (e.g. a fallback to the
// primary), folded with its repeats like the monitor's own.
func (m *Monitor) Emit(e health.Event) { m.agg.emit(e) }

// EventCounts returns how many events of each kind were emitted, repeats
// included (whether or not an observer is set or kept up), by kind.
func (m *Monitor) EventCounts() map[health.EventKind]uint64 {
	out := make(map[health.EventKind]uint64, health.NumEventKinds-1)
	for _, k := range health.EventKinds() {
		out[k] = m.agg.counts[k].Load()
	}
	return out
}

// Start launches one probe loop per node, the heartbeat writer if any, and
// the event delivery, and returns at once: it does no I/O itself. Each
// loop probes its node at once; Ready reports when every node has been
// probed once.
func (m *Monitor) Start() {
	if !m.started.CompareAndSwap(false, true) {
		return
	}
	// A node serves only once a probe answered: until then it is out of
	// rotation, and the primary not usable (writes wait for its probe).
	// Without probes (a Monitor never started) every node is up.
	for _, n := range m.nodes {
		n.up.Store(false)
	}
	m.deliver.Add(1)
	go func() { defer m.deliver.Done(); m.agg.deliver(m.opts.Observer) }()
	m.first.Add(len(m.nodes))
	go func() { m.first.Wait(); close(m.ready) }()
	m.primaryFirst = make(chan struct{})
	m.epoch = time.Now()
	for i := range m.nodes {
		m.loops.Add(1)
		go m.loop(i)
	}
	if m.opts.Beat != nil {
		m.loops.Add(1)
		go m.beat()
	}
}

// Ready returns a channel closed once every node has been probed (the
// probe answered or failed) after Start.
func (m *Monitor) Ready() <-chan struct{} { return m.ready }

// Close stops every goroutine and waits for them.
func (m *Monitor) Close() {
	if !m.closed.CompareAndSwap(false, true) {
		return
	}
	close(m.stop)
	m.cancel() // probes in flight end now, not at their timeout
	m.loops.Wait()
	if m.started.Load() {
		<-m.ready // its goroutine ends once every loop probed once
	}
	m.agg.close()
	// Deliver what is queued, but do not hang on an observer that blocks.
	done := make(chan struct{})
	go func() { m.deliver.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// Kick asks every node to be probed now (rate-limited by the loops), for
// example after a write was rejected as read-only.
func (m *Monitor) Kick() {
	for _, k := range m.kick {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

func (m *Monitor) loop(i int) {
	defer m.loops.Done()
	if i == int(m.primary.Load()) {
		m.probeOnce(i)
		close(m.primaryFirst)
	} else {
		// The replicas' first probes wait for the primary's, so that its
		// GTID sample is there to measure their lag against: Ready then
		// means roles and lags are known.
		select {
		case <-m.primaryFirst:
		case <-m.stop:
		}
		m.probeOnce(i)
	}
	m.first.Done()
	t := time.NewTimer(untilTick(m.epoch, time.Now(), m.opts.Interval))
	defer t.Stop()
	last := m.opts.Now()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			t.Reset(untilTick(m.epoch, time.Now(), m.opts.Interval))
		case <-m.kick[i]:
			// A kick is honoured at most every tenth of an interval.
			if m.opts.Now().Sub(last) < m.opts.Interval/10 {
				continue
			}
		}
		last = m.opts.Now()
		m.probeOnce(i)
		if i == 0 {
			m.agg.flush()
		}
	}
}

// untilTick is how long from now to the next tick of a schedule that
// ticks at epoch + k×interval. Every probe loop (and the heartbeat
// writer) ticks on one schedule, so that their timers wake an idle
// process once per interval rather than once per node; each probe's
// reply still wakes it, so the saving is smaller than the count of timers
// suggests.
func untilTick(epoch, now time.Time, interval time.Duration) time.Duration {
	return interval - now.Sub(epoch)%interval
}

func (m *Monitor) beat() {
	defer m.loops.Done()
	t := time.NewTimer(untilTick(m.epoch, time.Now(), m.opts.Interval))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			t.Reset(untilTick(m.epoch, time.Now(), m.opts.Interval))
			ctx, cancel := context.WithTimeout(m.ctx, m.opts.Timeout)
			_ = m.opts.Beat(ctx) // a failing primary shows in its probes
			cancel()
		}
	}
}

// probeOnce probes node i and folds the reading into its state.
func (m *Monitor) probeOnce(i int) {
	n := m.nodes[i]
	sent := m.opts.Now()
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.Timeout)
	r, err := m.probe(ctx, i)
	cancel()
	if m.ctx.Err() != nil {
		return // closing: a cancelled probe says nothing about the node
	}
	if err != nil {
		n.lastError.Store(&err)
		m.setUp(i, false, err)
		m.evaluateRoles()
		return
	}
	if g := m.opts.Galera; g != nil {
		m.galeraReading(i, sent, r)
		return
	}
	n.probed.Store(true)
	n.lastError.Store(nil)
	n.failures.Store(0)
	n.replica.Store(r.Replica)
	// A probe sent before a write was rejected as read-only may have read
	// the node writable a moment earlier: it must not undo the rejection.
	stale := sent.UnixNano() < n.rejectedAt.Load()
	n.writable.Store(!r.ReadOnly && !r.Replica && !stale)
	pos := r.Position
	n.position.Store(&pos)
	m.setUp(i, true, nil)
	if i == int(m.primary.Load()) && !r.Replica {
		m.recordPrimary(sent, r.Position, r.GTIDs)
		n.lag.Store(0)
		n.asOf.Store(sent.UnixNano())
		m.setFenced(i, false, "")
	} else {
		m.replicaLag(i, sent, r)
	}
	m.evaluateRoles()
}

// galeraReading folds a Galera node's reading into its state: a node out
// of the Primary component or not ready is down (its queries fail with
// 1047); one that is desynced, a donor (unless allowed), joining or
// rejecting queries is up but fenced, and no writer candidate; a serving
// node with more write-sets waiting than MaxRecvQueue is fenced for reads
// only. Lag is not measured from GTID samples: a Synced node has certified
// every write-set, and its receive queue says how many it has yet to
// apply; with write-sets queued, its data is as of the last probe that
// saw the queue empty.
func (m *Monitor) galeraReading(i int, sent time.Time, r Reading) {
	n := m.nodes[i]
	g := m.opts.Galera
	if r.Galera == nil {
		err := errors.New("no wsrep status: not a Galera node")
		n.lastError.Store(&err)
		m.setUp(i, false, err)
		m.evaluateRoles()
		return
	}
	ok, down, why := g.serving(r.Galera)
	if down {
		err := errors.New(why)
		n.lastError.Store(&err)
		n.writable.Store(false)
		m.setUp(i, false, err)
		m.evaluateRoles()
		return
	}
	n.probed.Store(true)
	n.lastError.Store(nil)
	n.failures.Store(0)
	n.replica.Store(false)
	n.wsrepIndex.Store(int32(r.Galera.LocalIndex))
	n.writable.Store(ok && !r.ReadOnly)
	pos := r.Position
	n.position.Store(&pos)
	m.setUp(i, true, nil)
	if ok && g.MaxRecvQueue > 0 && r.Galera.RecvQueue > g.MaxRecvQueue {
		ok, why = false, "recv queue "+strconv.FormatInt(r.Galera.RecvQueue, 10)
	}
	switch asOf := n.asOf.Load(); {
	case ok && r.Galera.RecvQueue == 0:
		n.lag.Store(0)
		n.asOf.Store(sent.UnixNano())
	case ok && asOf > 0:
		// Write-sets wait to be applied: everything certified when the
		// queue was last seen empty is there, and no more is known. A
		// read waits on such a node (it has certified what it lacks)
		// rather than leave it for the writer.
		n.lag.Store(max(sent.UnixNano()-asOf, 0))
	default:
		n.lag.Store(-1)
		n.asOf.Store(0)
	}
	m.setFenced(i, !ok, why)
	m.evaluateRoles()
}

// allSeen reports that every node has been probed once.
func (m *Monitor) allSeen() bool {
	for _, n := range m.nodes {
		if !n.seen.Load() {
			return false
		}
	}
	return true
}

// galeraWriter chooses the writer among the serving nodes (cands, in index
// order; cur the current one): Priority's first, else the lowest
// wsrep_local_index; the current one while it serves under NoFailback.
// -1 when none serves.
func (m *Monitor) galeraWriter(cands []int, cur int) int {
	if len(cands) == 0 {
		return -1
	}
	if m.opts.Galera.NoFailback && m.writerChosen && slices.Contains(cands, cur) {
		return cur
	}
	return m.galeraOrder(cands)[0]
}

// galeraOrder sorts the serving nodes by preference: Priority's order,
// then by wsrep_local_index.
func (m *Monitor) galeraOrder(cands []int) []int {
	rank := func(i int) (int, int32) {
		if p := slices.Index(m.opts.Galera.Priority, i); p >= 0 {
			return p, 0
		}
		return len(m.opts.Galera.Priority), m.nodes[i].wsrepIndex.Load()
	}
	out := slices.Clone(cands)
	slices.SortStableFunc(out, func(a, b int) int {
		pa, ia := rank(a)
		pb, ib := rank(b)
		if pa != pb {
			return pa - pb
		}
		return int(ia - ib)
	})
	return out
}

// galeraExtraWriters marks, beside the writer w, the next MaxWriters-1
// serving nodes by preference as writers too (Node.IsPrimary), and clears
// every other node's mark: marks are set before others are cleared, as
// for a change of primary.
func (m *Monitor) galeraExtraWriters(cands []int, w int) {
	extra := max(m.opts.Galera.MaxWriters, 1) - 1
	writers := []int{w}
	for _, i := range m.galeraOrder(cands) {
		if len(writers) > extra {
			break
		}
		if i != w {
			writers = append(writers, i)
		}
	}
	for _, i := range writers {
		m.nodes[i].primary.Store(true)
	}
	for i, n := range m.nodes {
		if !slices.Contains(writers, i) && n.primary.Swap(false) {
			m.notifyLocked()
		}
	}
}

// recordPrimary appends a primary position sample.
func (m *Monitor) recordPrimary(at time.Time, pos GTIDSet, gtids bool) {
	if pos.IsZero() && !gtids {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, sample{at, pos})
	if len(m.samples) > maxSamples {
		m.samples = append(m.samples[:0], m.samples[len(m.samples)-maxSamples:]...)
	}
}

// replicaLag computes a replica's lag and data horizon from its reading.
//
// From GTIDs: the replica has everything the primary had binlogged at the
// newest primary sample its position contains (data as of that sample's
// time), and it lags by the age of the oldest sample it does not contain.
// Seconds_Behind_Master and the heartbeat can only raise the estimate,
// the former no further than the age of that horizon. A
// stopped IO or SQL thread is not lag 0: the replica is fenced.
func (m *Monitor) replicaLag(i int, sent time.Time, r Reading) {
	n := m.nodes[i]
	if r.Replica && (!r.IORunning && !r.IOConnecting || !r.SQLRunning) {
		n.lag.Store(math.MaxInt64)
		n.asOf.Store(0)
		m.setFenced(i, true, "replication stopped")
		return
	}
	lag := time.Duration(-1)
	var asOf time.Time
	fromGTID := false // the GTID samples spoke: they alone set the horizon
	m.mu.Lock()
	if r.GTIDs || !r.Position.IsZero() {
		for _, s := range m.samples {
			if s.at.After(sent) {
				break
			}
			fromGTID = true
			if r.Position.Contains(s.pos) {
				asOf = s.at
			} else {
				lag = sent.Sub(s.at) // behind this sample: a lower bound
				break
			}
		}
		if fromGTID && lag < 0 {
			lag = 0 // has the newest sample
		}
	}
	m.mu.Unlock()
	if r.SecondsBehind >= 0 {
		sbm := time.Duration(r.SecondsBehind) * time.Second
		if fromGTID && !asOf.IsZero() {
			// The samples prove the data as of asOf. Seconds_Behind_Master
			// counts from when the event being applied first ran: after an
			// idle spell, or for a long transaction, it reads that span,
			// not staleness, and may not raise the lag past asOf's age.
			sbm = min(sbm, sent.Sub(asOf))
		}
		lag = max(lag, sbm)
	}
	if !r.Heartbeat.IsZero() {
		lag = max(lag, sent.Sub(r.Heartbeat))
	}
	if !fromGTID && lag >= 0 {
		// Horizon from Seconds_Behind_Master or the heartbeat alone; the
		// former counts whole seconds: round up.
		asOf = sent.Add(-lag - time.Second)
	}
	n.lag.Store(int64(lag))
	switch {
	case fromGTID && asOf.IsZero():
		// Behind even the oldest sample: its data is older than anything
		// this process has seen, which is known, not "unknown" (a session
		// resumed from a token must not read there).
		n.asOf.Store(1)
	case asOf.IsZero():
		n.asOf.Store(0)
	default:
		n.asOf.Store(asOf.UnixNano())
	}
	if m.opts.MaxLag > 0 && lag >= 0 {
		m.setFenced(i, lag > m.opts.MaxLag, "lag "+lag.Round(time.Millisecond).String())
	} else if lag >= 0 || !r.Replica {
		m.setFenced(i, false, "")
	}
}

// setFenced records a replica's fence. A fenced replica whose cause
// changes (replication stopped, then lag while it catches up) raises a
// new Fenced event with the new cause. Only node i's probe loop calls it.
func (m *Monitor) setFenced(i int, fenced bool, why string) {
	n := m.nodes[i]
	cause := why
	if c, _, ok := strings.Cut(why, " "); ok && c == "lag" {
		cause = "lag"
	}
	if n.fenced.Swap(fenced) == fenced && (!fenced || cause == n.fenceCause) {
		return
	}
	n.fenceCause = cause
	k := health.Unfenced
	if fenced {
		k = health.Fenced
	}
	m.agg.emit(health.Event{Kind: k, Node: n.Name, Detail: why})
}

func (m *Monitor) setUp(i int, up bool, err error) {
	n := m.nodes[i]
	first := !n.seen.Swap(true)
	if n.up.Swap(up) == up && !first {
		return
	}
	e := health.Event{Kind: health.NodeUp, Node: n.Name}
	if first && up {
		// Its first probe answered: it starts serving, which is no news
		// for an operator. Writes waiting for it look.
		if i == int(m.primary.Load()) {
			m.mu.Lock()
			m.notifyLocked()
			m.mu.Unlock()
		}
		return
	}
	if !up {
		e = health.Event{Kind: health.NodeDown, Node: n.Name, Err: err, Code: errCode(err)}
		if m.opts.Down != nil {
			m.opts.Down(i)
		}
	}
	m.agg.emit(e)
	if i == int(m.primary.Load()) {
		m.mu.Lock()
		m.notifyLocked()
		m.mu.Unlock()
	}
}

// evaluateRoles follows the topology the database's tooling sets: exactly
// one writable node is the primary; none means the primary is lost (writes
// pause); more than one is a split brain (writes are refused).
func (m *Monitor) evaluateRoles() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var writable []int
	for i, n := range m.nodes {
		if n.probed.Load() && n.up.Load() && n.writable.Load() {
			writable = append(writable, i)
		}
	}
	cur := int(m.primary.Load())
	var serving []int
	if m.opts.Galera != nil {
		// Every serving node is writable; one is chosen, and no split.
		serving = slices.Clone(writable)
		if w := m.galeraWriter(writable, cur); w >= 0 {
			writable = writable[:1]
			writable[0] = w
			m.writerChosen = m.writerChosen || m.allSeen()
		}
	}
	split := len(writable) > 1
	if m.split.Swap(split) != split {
		if split {
			names := ""
			for _, i := range writable {
				names += " " + m.nodes[i].Name
			}
			m.agg.emit(health.Event{Kind: health.SplitBrain, Detail: "writable:" + names})
		}
		m.notifyLocked()
	}
	if len(writable) == 1 && writable[0] != cur {
		m.nodes[writable[0]].primary.Store(true) // see Node.IsPrimary
		m.primary.Store(int32(writable[0]))
		m.nodes[cur].primary.Store(false)
		m.samples = m.samples[:0] // positions of the old primary no longer apply
		detail := "was " + m.nodes[cur].Name
		if m.opts.Galera != nil {
			detail = "Galera writer; " + detail
		}
		m.agg.emit(health.Event{Kind: health.SwitchoverFollowed, Node: m.nodes[writable[0]].Name,
			Detail: detail})
		m.notifyLocked()
	}
	if m.opts.Galera != nil && len(serving) > 0 {
		m.galeraExtraWriters(serving, int(m.primary.Load()))
	}
	m.checkPrimaryLocked()
}

// checkPrimaryLocked raises PrimaryLost when writes lose their primary
// (down, read-only, split brain) and PrimaryFound when they have one again.
func (m *Monitor) checkPrimaryLocked() {
	i := int(m.primary.Load())
	n := m.nodes[i]
	ok := n.up.Load() && n.writable.Load() && !m.split.Load()
	if m.primaryOK.Swap(ok) == ok {
		return
	}
	m.notifyLocked() // writes waiting for a primary look again
	if ok {
		m.agg.emit(health.Event{Kind: health.PrimaryFound, Node: n.Name})
		return
	}
	why := "read-only"
	switch {
	case !n.up.Load():
		why = "down"
	case m.split.Load():
		why = "split brain"
	}
	m.agg.emit(health.Event{Kind: health.PrimaryLost, Node: n.Name, Detail: why})
}

// Failure records a connection-class failure of real traffic on node i;
// after FailAfter in a row the node is out until a probe answers.
//
// Without probes (a Monitor never started) nothing could bring the node
// back, so failures are not counted.
func (m *Monitor) Failure(i int, err error) {
	if !m.started.Load() || m.closed.Load() {
		return
	}
	n := m.nodes[i]
	if int(n.failures.Add(1)) >= m.opts.FailAfter {
		m.setUp(i, false, err)
		m.evaluateRoles()
		m.Kick()
	}
}

// Success records a statement that reached the node.
func (n *Node) Success() {
	if n.failures.Load() != 0 {
		n.failures.Store(0)
	}
}

// ReadOnly records that node i rejected a write as read-only: it is not
// the primary any more. Writes wait until the probes find the new one.
func (m *Monitor) ReadOnly(i int) {
	m.nodes[i].rejectedAt.Store(m.opts.Now().UnixNano())
	m.nodes[i].writable.Store(false)
	m.mu.Lock()
	m.notifyLocked()
	m.checkPrimaryLocked()
	m.mu.Unlock()
	m.Kick()
}

// errCode is the MySQL error number of err, or 0.
func errCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
