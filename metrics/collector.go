package metrics

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/router"
)

var _ prometheus.Collector = (*Collector)(nil)

// Role label values.
const (
	rolePrimary = "primary"
	roleReplica = "replica"
)

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
	fallbacks       *prometheus.Desc
	retries         *prometheus.Desc
	retriesRefused  *prometheus.Desc
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
// prometheus.Labels{"cluster": "orders"}. The names "node", "role" and
// "reason" are taken by the collector's own labels; using one of them
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

	node := []string{"node"}
	nodeRole := []string{"node", "role"}
	col.queries = col.desc("queries_total",
		"Statements sent to the node, labelled with the node's role at scrape time.", nodeRole)
	col.routes = col.desc("routes_total",
		"Statements routed, by the reason of their final routing decision.", []string{"reason"})
	col.nodeErrors = col.desc("node_errors_total",
		"Connection-class failures of real traffic on the node.", node)
	col.nodeReadRetries = col.desc("node_read_retries_total",
		"Reads that failed on the node and were retried on another node.", node)
	col.nodeUp = col.desc("node_up",
		"Whether the node is in rotation (1) or taken out by failed probes or traffic (0).", nodeRole)
	col.nodeFenced = col.desc("node_fenced",
		"Whether the replica is fenced for lag over the limit or stopped replication (1) or not (0).", node)
	col.nodePrimary = col.desc("node_primary",
		"Whether the node is the one currently taken as primary (1) or not (0).", node)
	col.replicaLag = col.desc("replica_lag_seconds",
		"Estimated replication lag of the node behind the primary in seconds, +Inf when replication is stopped, absent when unknown.", node)
	col.nodeInFlight = col.desc("node_in_flight",
		"Statements running on the node now.", node)
	col.nodeLatency = col.desc("node_latency_seconds",
		"Exponentially weighted moving average of the node's statement latency in seconds, absent before its first statement.", node)
	col.reads = col.desc("reads_total",
		"Plain reads routed, whichever node served them.", nil)
	col.primaryReads = col.desc("primary_reads_total",
		"Plain reads the primary served (fallbacks, read-your-writes, hints, max-lag).", nil)
	col.fallbacks = col.desc("fallbacks_total",
		"Reads sent to the primary because no replica qualified.", nil)
	col.retries = col.desc("retries_total",
		"Failed reads retried on another node within the retry budget.", nil)
	col.retriesRefused = col.desc("retries_refused_total",
		"Failed reads not retried because the retry budget was spent.", nil)
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
		c.reads, c.primaryReads, c.fallbacks, c.retries, c.retriesRefused,
	} {
		ch <- d
	}
}

// Collect takes a snapshot of the Connector's Stats and sends it as
// metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.conn.Stats()
	for _, n := range s.Nodes {
		role := roleReplica
		if n.Primary {
			role = rolePrimary
		}
		send(ch, c.queries, prometheus.CounterValue, float64(n.Queries), n.Name, role)
		send(ch, c.nodeErrors, prometheus.CounterValue, float64(n.Errors), n.Name)
		send(ch, c.nodeReadRetries, prometheus.CounterValue, float64(n.Retries), n.Name)
		send(ch, c.nodeUp, prometheus.GaugeValue, bool01(n.Up), n.Name, role)
		send(ch, c.nodeFenced, prometheus.GaugeValue, bool01(n.Fenced), n.Name)
		send(ch, c.nodePrimary, prometheus.GaugeValue, bool01(n.Primary), n.Name)
		if n.LagKnown {
			send(ch, c.replicaLag, prometheus.GaugeValue, lagSeconds(n.Lag), n.Name)
		}
		send(ch, c.nodeInFlight, prometheus.GaugeValue, float64(n.InFlight), n.Name)
		if n.Latency > 0 { // 0: no statement measured yet
			send(ch, c.nodeLatency, prometheus.GaugeValue, n.Latency.Seconds(), n.Name)
		}
	}
	for _, r := range c.reasons {
		send(ch, c.routes, prometheus.CounterValue, float64(s.Routes[r]), r)
	}
	send(ch, c.reads, prometheus.CounterValue, float64(s.Reads))
	send(ch, c.primaryReads, prometheus.CounterValue, float64(s.PrimaryReads))
	send(ch, c.fallbacks, prometheus.CounterValue, float64(s.Fallbacks))
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
