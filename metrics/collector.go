package metrics

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/router"
)

var _ prometheus.Collector = (*Collector)(nil)

// Collector is a prometheus.Collector over a Connector's Stats. It takes
// one snapshot per scrape and keeps no state of its own between scrapes.
// It is safe for concurrent use.
type Collector struct {
	conn        *rwshard.Connector
	namespace   string
	constLabels prometheus.Labels
	reasons     []string // router.Reasons() names, in order

	queries         *prometheus.Desc
	routes          *prometheus.Desc
	nodeErrors      *prometheus.Desc
	nodeReadRetries *prometheus.Desc
	nodeUp          *prometheus.Desc
	nodeFenced      *prometheus.Desc
	nodePrimary     *prometheus.Desc
	replicaLag      *prometheus.Desc
	nodeInFlight    *prometheus.Desc
	nodeLatency     *prometheus.Desc
	reads           *prometheus.Desc
	primaryReads    *prometheus.Desc
	pinned          *prometheus.Desc
	fallbacks       *prometheus.Desc
	positionQueries *prometheus.Desc
	retries         *prometheus.Desc
	retriesRefused  *prometheus.Desc

	duration      *prometheus.Desc
	serverErrors  *prometheus.Desc
	waits         *prometheus.Desc
	waitTimeouts  *prometheus.Desc
	waitSeconds   *prometheus.Desc
	poolOpen      *prometheus.Desc
	poolInUse     *prometheus.Desc
	poolIdle      *prometheus.Desc
	poolWaits     *prometheus.Desc
	poolWaitSecs  *prometheus.Desc
	poolMax       *prometheus.Desc
	longHolds     *prometheus.Desc
	holdSeconds   *prometheus.Desc
	stmtHits      *prometheus.Desc
	stmtMisses    *prometheus.Desc
	stmtEvictions *prometheus.Desc
	events        *prometheus.Desc
	eventKinds    []string // health.EventKinds() names, in order
}

// Option configures a Collector.
type Option func(*Collector)

// WithNamespace sets the prefix of every metric name (default "rwshard").
// An empty namespace leaves the names unprefixed.
func WithNamespace(ns string) Option {
	return func(c *Collector) { c.namespace = ns }
}

// WithConstLabels adds labels with fixed values to every metric, so that
// collectors of several Connectors can be registered side by side, e.g.
// prometheus.Labels{"cluster": "orders"}. The names "node", "reason",
// "class", "code" and "kind" are taken by the collector's own labels; using one of them
// makes registration fail.
func WithConstLabels(l prometheus.Labels) Option {
	return func(c *Collector) {
		if c.constLabels == nil {
			c.constLabels = prometheus.Labels{}
		}
		for k, v := range l {
			c.constLabels[k] = v
		}
	}
}

// NewCollector returns a prometheus.Collector over c's Stats, taken at
// scrape time: it starts no background work and holds no reference that
// outlives c. c must not be nil.
func NewCollector(c *rwshard.Connector, opts ...Option) *Collector {
	if c == nil {
		panic("rwshard: metrics: NewCollector with a nil Connector")
	}
	col := &Collector{conn: c, namespace: "rwshard"}
	for _, o := range opts {
		o(col)
	}
	for _, r := range router.Reasons() {
		col.reasons = append(col.reasons, r.String())
	}

	for _, k := range health.EventKinds() {
		col.eventKinds = append(col.eventKinds, k.String())
	}

	node := []string{"node"}
	col.queries = col.desc("queries_total",
		"Statements sent to the node.", node)
	col.routes = col.desc("routes_total",
		"Statements routed, by the reason of their final routing decision.", []string{"reason"})
	col.nodeErrors = col.desc("node_errors_total",
		"Connection-class failures of real traffic on the node.", node)
	col.nodeReadRetries = col.desc("node_read_retries_total",
		"Reads that failed on the node and were retried on another node.", node)
	col.nodeUp = col.desc("node_up",
		"Whether the node is in rotation (1) or taken out by failed probes or traffic (0).", node)
	col.nodeFenced = col.desc("node_fenced",
		"Whether the replica is fenced for lag over the limit or stopped replication (1) or not (0).", node)
	col.nodePrimary = col.desc("node_primary",
		"Whether the node is the one currently taken as primary (1) or not (0).", node)
	col.replicaLag = col.desc("replica_lag_seconds",
		"Estimated replication lag of the replica behind the primary in seconds, +Inf when replication is stopped, absent when unknown.", node)
	col.nodeInFlight = col.desc("node_in_flight",
		"Statements running on the node now.", node)
	col.nodeLatency = col.desc("node_latency_seconds",
		"Exponentially weighted moving average of the node's statement latency in seconds, absent before its first statement.", node)
	col.reads = col.desc("reads_total",
		"Plain reads routed, whichever node served them.", nil)
	col.primaryReads = col.desc("primary_reads_total",
		"Plain reads the primary served (fallbacks, read-your-writes, hints, max-lag).", nil)
	col.pinned = col.desc("pinned_connections",
		"Logical connections pinned to their primary connection now by session state that cannot be replayed (USE, PREPARE, LOCK TABLES, …).", nil)
	col.fallbacks = col.desc("fallbacks_total",
		"Reads sent to the primary because no replica qualified.", nil)
	col.positionQueries = col.desc("position_queries_total",
		"Reads of the primary's GTID position for read-your-writes (universal reads share them).", nil)
	col.retries = col.desc("retries_total",
		"Failed reads retried on another node within the retry budget.", nil)
	col.retriesRefused = col.desc("retries_refused_total",
		"Failed reads not retried because the retry budget was spent.", nil)
	col.duration = col.desc("statement_duration_seconds",
		"Time statements took on the node until they returned, causal waits and retries included, by class: read (plain reads) or write (every other statement).", []string{"node", "class"})
	col.serverErrors = col.desc("server_errors_total",
		"Errors the node's server returned to statements, by MySQL error number.", []string{"node", "code"})
	col.waits = col.desc("causal_waits_total",
		"Causal reads that waited on the replica for their session's GTID.", node)
	col.waitTimeouts = col.desc("causal_wait_timeouts_total",
		"Causal waits on the replica that timed out, the read going to the primary.", node)
	col.waitSeconds = col.desc("causal_wait_seconds_total",
		"Time causal reads spent waiting on the replica for their session's GTID.", node)
	col.poolOpen = col.desc("pool_open_connections",
		"Connections open to the node, in use or idle.", node)
	col.poolInUse = col.desc("pool_in_use_connections",
		"Connections to the node in use now.", node)
	col.poolIdle = col.desc("pool_idle_connections",
		"Idle connections to the node.", node)
	col.poolWaits = col.desc("pool_waits_total",
		"Times a statement waited for a connection to the node because its pool was at its limit.", node)
	col.poolWaitSecs = col.desc("pool_wait_seconds_total",
		"Time statements spent waiting for a connection to the node.", node)
	col.poolMax = col.desc("pool_max_open_connections",
		"The node's pool limit in force: rwshard.maxOpenConns, or its budget of the server's max_connections when lower; 0: none.", node)
	col.longHolds = col.desc("long_holds",
		"Logical connections holding a backend connection (a transaction, or a result set not closed) longer than rwshard.holdWarn now.", nil)
	col.holdSeconds = col.desc("hold_seconds",
		"Time logical connections held a backend connection in a transaction or with a result set open, with rwshard.holdWarn or holdLimit on.", nil)
	col.stmtHits = col.desc("stmt_cache_hits_total",
		"Executions that found their statement prepared on the node's connection.", node)
	col.stmtMisses = col.desc("stmt_cache_misses_total",
		"Executions that had to prepare their statement on the node's connection.", node)
	col.stmtEvictions = col.desc("stmt_cache_evictions_total",
		"Prepared statements closed on the node's connections to make room.", node)
	col.events = col.desc("events_total",
		"Health and routing events, repeats included, by kind.", []string{"kind"})
	return col
}

func (c *Collector) desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(c.namespace, "", name), help, labels, c.constLabels)
}

// Describe sends the descriptors of every metric the collector may emit.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.queries, c.routes, c.nodeErrors, c.nodeReadRetries,
		c.nodeUp, c.nodeFenced, c.nodePrimary, c.replicaLag, c.nodeInFlight, c.nodeLatency,
		c.reads, c.primaryReads, c.pinned, c.fallbacks, c.positionQueries, c.retries, c.retriesRefused,
		c.duration, c.serverErrors, c.waits, c.waitTimeouts, c.waitSeconds,
		c.poolOpen, c.poolInUse, c.poolIdle, c.poolWaits, c.poolWaitSecs, c.poolMax, c.longHolds, c.holdSeconds,
		c.stmtHits, c.stmtMisses, c.stmtEvictions, c.events,
	} {
		ch <- d
	}
}

// Collect takes a snapshot of the Connector's Stats and sends it as
// metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.conn.Stats()
	for _, n := range s.Nodes {
		send(ch, c.queries, prometheus.CounterValue, float64(n.Queries), n.Name)
		send(ch, c.nodeErrors, prometheus.CounterValue, float64(n.Errors), n.Name)
		send(ch, c.nodeReadRetries, prometheus.CounterValue, float64(n.Retries), n.Name)
		send(ch, c.nodeUp, prometheus.GaugeValue, bool01(n.Up), n.Name)
		send(ch, c.nodeFenced, prometheus.GaugeValue, bool01(n.Fenced), n.Name)
		send(ch, c.nodePrimary, prometheus.GaugeValue, bool01(n.Primary), n.Name)
		if n.LagKnown && !n.Primary {
			send(ch, c.replicaLag, prometheus.GaugeValue, lagSeconds(n.Lag), n.Name)
		}
		send(ch, c.nodeInFlight, prometheus.GaugeValue, float64(n.InFlight), n.Name)
		if n.Latency > 0 { // 0: no statement measured yet
			send(ch, c.nodeLatency, prometheus.GaugeValue, n.Latency.Seconds(), n.Name)
		}
		c.histogram(ch, n.ReadLatency, n.Name, "read")
		c.histogram(ch, n.WriteLatency, n.Name, "write")
		for _, code := range slices.Sorted(maps.Keys(n.ServerErrors)) {
			send(ch, c.serverErrors, prometheus.CounterValue, float64(n.ServerErrors[code]), n.Name, strconv.Itoa(int(code)))
		}
		send(ch, c.waits, prometheus.CounterValue, float64(n.Waits), n.Name)
		send(ch, c.waitTimeouts, prometheus.CounterValue, float64(n.WaitTimeouts), n.Name)
		send(ch, c.waitSeconds, prometheus.CounterValue, n.WaitTime.Seconds(), n.Name)
		send(ch, c.poolOpen, prometheus.GaugeValue, float64(n.Pool.OpenConnections), n.Name)
		send(ch, c.poolInUse, prometheus.GaugeValue, float64(n.Pool.InUse), n.Name)
		send(ch, c.poolIdle, prometheus.GaugeValue, float64(n.Pool.Idle), n.Name)
		send(ch, c.poolWaits, prometheus.CounterValue, float64(n.Pool.WaitCount), n.Name)
		send(ch, c.poolWaitSecs, prometheus.CounterValue, n.Pool.WaitDuration.Seconds(), n.Name)
		send(ch, c.poolMax, prometheus.GaugeValue, float64(n.Pool.MaxOpenConnections), n.Name)
		send(ch, c.stmtHits, prometheus.CounterValue, float64(n.StmtHits), n.Name)
		send(ch, c.stmtMisses, prometheus.CounterValue, float64(n.StmtMisses), n.Name)
		send(ch, c.stmtEvictions, prometheus.CounterValue, float64(n.StmtEvictions), n.Name)
	}
	for _, k := range c.eventKinds {
		send(ch, c.events, prometheus.CounterValue, float64(s.Events[k]), k)
	}
	for _, r := range c.reasons {
		send(ch, c.routes, prometheus.CounterValue, float64(s.Routes[r]), r)
	}
	send(ch, c.reads, prometheus.CounterValue, float64(s.Reads))
	send(ch, c.primaryReads, prometheus.CounterValue, float64(s.PrimaryReads))
	send(ch, c.pinned, prometheus.GaugeValue, float64(s.Pinned))
	send(ch, c.longHolds, prometheus.GaugeValue, float64(s.LongHolds))
	c.holdHistogram(ch, s.HoldTimes)
	send(ch, c.fallbacks, prometheus.CounterValue, float64(s.Fallbacks))
	send(ch, c.positionQueries, prometheus.CounterValue, float64(s.PositionQueries))
	send(ch, c.retries, prometheus.CounterValue, float64(s.Retries))
	send(ch, c.retriesRefused, prometheus.CounterValue, float64(s.RetriesRefused))
}

// send emits one sample; a sample that cannot be built (a node name that
// is not valid UTF-8) is reported to the registry as an invalid metric,
// failing the scrape with the reason rather than panicking.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

// latencyBounds are rwshard's histogram bounds, copied once.
var latencyBounds = rwshard.LatencyBounds()

// histogram emits a latency histogram, its buckets made cumulative.
func (c *Collector) histogram(ch chan<- prometheus.Metric, h rwshard.Histogram, node, class string) {
	buckets := make(map[float64]uint64, len(latencyBounds))
	var cum uint64
	for i, le := range latencyBounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[le.Seconds()] = cum
	}
	m, err := prometheus.NewConstHistogram(c.duration, h.Count, h.Sum.Seconds(), buckets, node, class)
	if err != nil {
		m = prometheus.NewInvalidMetric(c.duration, err)
	}
	ch <- m
}

// holdBounds are rwshard's hold-time histogram bounds, copied once.
var holdBounds = rwshard.HoldBounds()

// holdHistogram emits the hold-time histogram, its buckets made
// cumulative.
func (c *Collector) holdHistogram(ch chan<- prometheus.Metric, h rwshard.Histogram) {
	buckets := make(map[float64]uint64, len(holdBounds))
	var cum uint64
	for i, le := range holdBounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[le.Seconds()] = cum
	}
	m, err := prometheus.NewConstHistogram(c.holdSeconds, h.Count, h.Sum.Seconds(), buckets)
	if err != nil {
		m = prometheus.NewInvalidMetric(c.holdSeconds, err)
	}
	ch <- m
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// lagSeconds converts a lag estimate; the health monitor reports a replica
// whose IO or SQL thread is stopped with the largest Duration, which is
// unbounded lag, not 292 years.
func lagSeconds(d time.Duration) float64 {
	if d == math.MaxInt64 {
		return math.Inf(1)
	}
	return d.Seconds()
}
