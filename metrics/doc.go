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
// and, if the program serves no /metrics yet, one line does (package
// promhttp of client_golang):
//
//	go http.ListenAndServe(":9090", promhttp.Handler())
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
//	rwshard_queries_total{node}                         counter    statements sent to the node
//	rwshard_node_errors_total{node}                     counter    connection-class failures of real traffic
//	rwshard_node_read_retries_total{node}               counter    reads that failed here and were retried elsewhere
//	rwshard_server_errors_total{node,code}              counter    errors the server returned, by MySQL error number
//	rwshard_statement_duration_seconds{node,class}      histogram  time until the statement returned; class read or write
//	rwshard_node_up{node}                               gauge      1 in rotation, 0 out
//	rwshard_node_fenced{node}                           gauge      1 for a replica fenced for lag or stopped replication
//	rwshard_node_primary{node}                          gauge      1 for the node currently taken as primary: the role
//	rwshard_replica_lag_seconds{node}                   gauge      a replica's lag estimate; absent when unknown, never for the primary
//	rwshard_node_in_flight{node}                        gauge      statements running on the node now
//	rwshard_node_latency_seconds{node}                  gauge      EWMA of statement latency (what balancing uses); absent before the first
//	rwshard_causal_waits_total{node}                    counter    causal reads that waited on the replica for their GTID
//	rwshard_causal_wait_timeouts_total{node}            counter    of which timed out and went to the primary
//	rwshard_causal_wait_seconds_total{node}             counter    time spent in those waits
//	rwshard_pool_open_connections{node}                 gauge      connections open to the node
//	rwshard_pool_in_use_connections{node}               gauge      of which in use
//	rwshard_pool_idle_connections{node}                 gauge      of which idle
//	rwshard_pool_waits_total{node}                      counter    waits for a connection at the pool's limit
//	rwshard_pool_wait_seconds_total{node}               counter    time spent in those waits
//	rwshard_pool_max_open_connections{node}             gauge      the pool's limit in force: maxOpenConns or its budget of max_connections; 0 none
//	rwshard_stmt_cache_hits_total{node}                 counter    executions that found their statement prepared
//	rwshard_stmt_cache_misses_total{node}               counter    executions that prepared it
//	rwshard_stmt_cache_evictions_total{node}            counter    prepared statements closed to make room
//	rwshard_routes_total{reason}                        counter    statements by final routing reason
//	rwshard_reads_total                                 counter    plain reads, wherever they ran
//	rwshard_primary_reads_total                         counter    plain reads the primary served
//	rwshard_fallbacks_total                             counter    reads sent to the primary as no replica qualified
//	rwshard_position_queries_total                      counter    reads of the primary's GTID position (universal, causal)
//	rwshard_retries_total                               counter    failed reads retried within the retry budget
//	rwshard_retries_refused_total                       counter    failed reads the retry budget did not retry
//	rwshard_events_total{kind}                          counter    health and routing events by kind (node-down, split-brain, …)
//	rwshard_long_holds                                  gauge      logical connections holding a backend connection past rwshard.holdWarn now
//	rwshard_hold_seconds                                histogram  how long transactions and open result sets held a connection (holdWarn or holdLimit on)
//
// These names and labels are stable: a change is a breaking change of
// this module. No counter carries the node's role as a label, so a
// switchover does not split a node's series: join on
// rwshard_node_primary for the role, e.g. the primary's write latency p99:
//
//	histogram_quantile(0.99, sum by (le) (rate(rwshard_statement_duration_seconds_bucket{class="write"}[5m])
//	  * on (node) group_left rwshard_node_primary))
//
// The histogram's buckets are rwshard.LatencyBounds() (0.5 ms to 10 s).
// Its count is every statement's; the durations of prepared statements
// run again inside a transaction are sampled, about one in 16 timed (see
// rwshard.NodeStats.ReadLatency).
// class="write" counts every statement that is not a plain read: writes,
// locking reads, session statements. rwshard_server_errors_total has a
// series per number seen (1062 duplicate key, 1213 deadlock, 1290
// read-only, …); none before the first. rwshard_events_total has a series
// for every kind from the first scrape.
//
// rwshard_routes_total has a series for every reason of router.Reasons()
// from the first scrape, at 0 until a statement takes that route, so that
// rate() and alerts see the first one. Reason names are router.Reason's:
// "replica", "write", "locking-read", "read-your-writes",
// "no-healthy-replica", ….
//
// rwshard_replica_lag_seconds is present only while the lag is known: not
// before the first probe, and never when health probes are off (OpenDB
// without Config.Health), and never for the node taken as primary. A
// replica whose IO or SQL thread is stopped reads +Inf: its lag is
// unbounded, and it is fenced.
// rwshard_node_latency_seconds is likewise absent until the node has run a
// statement; no sample is better than a made-up 0.
//
// Ratios are left to PromQL. The share of reads the primary served, which
// a read/write splitter wants low, is
//
//	rate(rwshard_primary_reads_total[5m]) / rate(rwshard_reads_total[5m])
package metrics
