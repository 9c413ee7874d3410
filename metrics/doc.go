// Package metrics exports an rwshard Connector's Stats to Prometheus.
//
// NewCollector returns a prometheus.Collector that takes a Connector.Stats
// snapshot at each scrape: no goroutine, no timer, no copy of the counters.
// Register it like any other collector:
//
//	db, err := sql.Open("rwshard", dsn)
//	…
//	c, err := rwshard.ConnectorOf(ctx, db)
//	…
//	prometheus.MustRegister(metrics.NewCollector(c))
//
// Several Connectors can be registered in one registry when each collector
// has its own constant labels, e.g.
// metrics.WithConstLabels(prometheus.Labels{"cluster": "orders"}); without
// them the second registration fails with prometheus.AlreadyRegisteredError.
// WithNamespace replaces the "rwshard" prefix.
//
// # Metrics
//
// With the default namespace:
//
//	rwshard_queries_total{node,role}          counter  statements sent to the node
//	rwshard_node_errors_total{node}           counter  connection-class failures of real traffic
//	rwshard_node_read_retries_total{node}     counter  reads that failed here and were retried elsewhere
//	rwshard_node_up{node,role}                gauge    1 in rotation, 0 out
//	rwshard_node_fenced{node}                 gauge    1 for a replica fenced for lag or stopped replication
//	rwshard_node_primary{node}                gauge    1 for the node currently taken as primary
//	rwshard_replica_lag_seconds{node}         gauge    lag estimate; absent when unknown
//	rwshard_node_in_flight{node}              gauge    statements running on the node now
//	rwshard_node_latency_seconds{node}        gauge    EWMA of statement latency; absent before the first
//	rwshard_routes_total{reason}              counter  statements by final routing reason
//	rwshard_reads_total                       counter  plain reads, wherever they ran
//	rwshard_primary_reads_total               counter  plain reads the primary served
//	rwshard_fallbacks_total                   counter  reads sent to the primary as no replica qualified
//	rwshard_retries_total                     counter  failed reads retried within the retry budget
//	rwshard_retries_refused_total             counter  failed reads the retry budget did not retry
//
// role is "primary" or "replica": the node's role at scrape time. A node's
// counters are per node, not per role, so after a switchover the series
// under the node's old role stops and one under its new role starts with
// the node's whole count; rate() and increase() handle that, and
// sum by (node) (rate(rwshard_queries_total[5m])) ignores it.
//
// rwshard_routes_total has a series for every reason of router.Reasons()
// from the first scrape, at 0 until a statement takes that route, so that
// rate() and alerts see the first one. Reason names are router.Reason's:
// "replica", "write", "locking-read", "read-your-writes",
// "no-healthy-replica", ….
//
// rwshard_replica_lag_seconds is present only while the lag is known: not
// before the first probe, and never when health probes are off (OpenDB
// without WithHealth). The primary reads 0. A replica whose IO or SQL
// thread is stopped reads +Inf: its lag is unbounded, and it is fenced.
// rwshard_node_latency_seconds is likewise absent until the node has run a
// statement; no sample is better than a made-up 0.
//
// Ratios are left to PromQL. The share of reads the primary served, which
// a read/write splitter wants low, is
//
//	rate(rwshard_primary_reads_total[5m]) / rate(rwshard_reads_total[5m])
package metrics
