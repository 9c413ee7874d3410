package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/metrics"
	"github.com/rwshard/rwshard/router"
)

// TestScrape routes reads, writes and a hint.Primary read, then scrapes
// the collector over HTTP and checks every series against what was sent
// where.
func TestScrape(t *testing.T) {
	const reads, writes = 3, 2
	c := newCluster(t)
	for range reads {
		expectRead(c.replica)
	}
	for range writes {
		expectWrite(c.primary)
	}
	expectRead(c.primary) // the hint.Primary read

	for range reads {
		c.read(t, context.Background())
	}
	for range writes {
		c.write(t)
	}
	c.read(t, hint.Primary(context.Background()))
	c.met(t)

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(metrics.NewCollector(c.conn)); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, reg)

	// Where the statements ran.
	wantSample(t, fams, "rwshard_queries_total", l("node", "replica1"), reads)
	wantSample(t, fams, "rwshard_queries_total", l("node", "primary"), writes+1)

	// Why: every reason has a series, the ones not taken at 0.
	routes := map[string]float64{"replica": reads, "write": writes, "hint-primary": 1}
	for _, r := range router.Reasons() {
		wantSample(t, fams, "rwshard_routes_total", l("reason", r.String()), routes[r.String()])
	}
	if got, want := len(fams["rwshard_routes_total"].GetMetric()), len(router.Reasons()); got != want {
		t.Errorf("rwshard_routes_total has %d series, want %d", got, want)
	}
	wantSample(t, fams, "rwshard_reads_total", nil, reads+1)
	wantSample(t, fams, "rwshard_primary_reads_total", nil, 1)
	wantSample(t, fams, "rwshard_fallbacks_total", nil, 0)
	wantSample(t, fams, "rwshard_position_queries_total", nil, 0)
	wantSample(t, fams, "rwshard_retries_total", nil, 0)
	wantSample(t, fams, "rwshard_retries_refused_total", nil, 0)

	// State of the nodes: health is off with OpenDB, so both are up,
	// unfenced, and of unknown lag.
	for _, n := range []struct{ name, role string }{{"primary", "primary"}, {"replica1", "replica"}} {
		primary := 0.0
		if n.role == "primary" {
			primary = 1
		}
		wantSample(t, fams, "rwshard_node_up", l("node", n.name), 1)
		wantSample(t, fams, "rwshard_node_primary", l("node", n.name), primary)
		wantSample(t, fams, "rwshard_node_fenced", l("node", n.name), 0)
		inFlight := 0.0 // backend connections checked out: the idle logical connection keeps the primary one
		if n.role == "primary" {
			inFlight = 1
		}
		wantSample(t, fams, "rwshard_node_in_flight", l("node", n.name), inFlight)
		wantSample(t, fams, "rwshard_node_errors_total", l("node", n.name), 0)
		wantSample(t, fams, "rwshard_node_read_retries_total", l("node", n.name), 0)
		if v, ok := sample(fams, "rwshard_node_latency_seconds", l("node", n.name)); !ok || v <= 0 || v > 10 {
			t.Errorf("rwshard_node_latency_seconds{node=%q} = %v, %v; want a measured latency", n.name, v, ok)
		}
	}
	if f, ok := fams["rwshard_replica_lag_seconds"]; ok {
		t.Errorf("rwshard_replica_lag_seconds with lag unknown: %v, want no sample", f)
	}

	// Latency histograms by node and class: the reads on the replica, the
	// writes and the hinted read on the primary.
	for _, h := range []struct {
		node, class string
		n           uint64
	}{{"replica1", "read", reads}, {"replica1", "write", 0}, {"primary", "write", writes}, {"primary", "read", 1}} {
		m := metric(fams, "rwshard_statement_duration_seconds", l("node", h.node, "class", h.class))
		if m == nil {
			t.Errorf("no histogram for %s/%s", h.node, h.class)
			continue
		}
		hist := m.GetHistogram()
		b := hist.GetBucket()
		// 14 bounds and +Inf, which the text exposition shows.
		if hist.GetSampleCount() != h.n || len(b) != 15 || b[13].GetUpperBound() != 10 || b[14].GetCumulativeCount() != h.n {
			t.Errorf("histogram %s/%s: count %d (want %d), %d buckets, last %v", h.node, h.class, hist.GetSampleCount(), h.n, len(b), b[len(b)-1])
		}
		if h.n > 0 && hist.GetSampleSum() <= 0 {
			t.Errorf("histogram %s/%s: sum %v", h.node, h.class, hist.GetSampleSum())
		}
	}
	// Pools: the idle logical connection keeps its primary connection.
	wantSample(t, fams, "rwshard_pool_in_use_connections", l("node", "primary"), 1)
	wantSample(t, fams, "rwshard_pool_open_connections", l("node", "replica1"), 1)
	wantSample(t, fams, "rwshard_pool_idle_connections", l("node", "replica1"), 1)
	wantSample(t, fams, "rwshard_pool_waits_total", l("node", "replica1"), 0)
	wantSample(t, fams, "rwshard_long_holds", nil, 0)
	wantSample(t, fams, "rwshard_causal_waits_total", l("node", "replica1"), 0)
	// The caller's pools (OpenDB) have no rwshard statement cache.
	wantSample(t, fams, "rwshard_stmt_cache_hits_total", l("node", "replica1"), 0)
	for _, k := range health.EventKinds() {
		wantSample(t, fams, "rwshard_events_total", l("kind", k.String()), 0)
	}
	if _, ok := fams["rwshard_server_errors_total"]; ok {
		t.Errorf("rwshard_server_errors_total before any error: want no sample")
	}

	// Types and help.
	for name, f := range fams {
		want := dto.MetricType_GAUGE
		switch {
		case strings.HasSuffix(name, "_total"):
			want = dto.MetricType_COUNTER
		case strings.HasSuffix(name, "_duration_seconds"), name == "rwshard_hold_seconds":
			want = dto.MetricType_HISTOGRAM
		}
		if f.GetType() != want {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), want)
		}
		if h := f.GetHelp(); h == "" || !strings.HasSuffix(h, ".") {
			t.Errorf("%s: help %q, want one sentence", name, h)
		}
	}
	if got, want := len(fams), 32; got != want { // 34 less the lag and server errors
		t.Errorf("%d metric families, want %d", got, want)
	}
}

// TestBeforeTraffic: a fresh Connector has every counter at 0 and every
// route series, but no latency and no lag, which are unknown.
func TestBeforeTraffic(t *testing.T) {
	c := newCluster(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c.conn))
	fams := scrape(t, reg)

	for _, r := range router.Reasons() {
		wantSample(t, fams, "rwshard_routes_total", l("reason", r.String()), 0)
	}
	wantSample(t, fams, "rwshard_queries_total", l("node", "primary"), 0)
	wantSample(t, fams, "rwshard_queries_total", l("node", "replica1"), 0)
	wantSample(t, fams, "rwshard_reads_total", nil, 0)
	for _, name := range []string{"rwshard_node_latency_seconds", "rwshard_replica_lag_seconds"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s before any statement or probe, want no sample", name)
		}
	}
	c.met(t)
}

// TestReadRetry: a read that fails on the replica with a connection-class
// error is retried on the primary, and the failure, the retry and the
// fallback are counted where they happened, until the retry budget is
// spent. A new connector's budget is full (20 retries at the default
// ratio, a little more as requests and the clock add to it), so the
// refusal comes within a bounded number of failing reads, not at once.
func TestReadRetry(t *testing.T) {
	c := newCluster(t)
	retried := 0
	for range 40 {
		c.replica.ExpectQuery(readSQL).WithArgs(1).WillReturnError(io.ErrUnexpectedEOF)
		expectRead(c.primary)
		var name string
		err := c.db.QueryRow(readSQL, 1).Scan(&name)
		if err == nil {
			retried++
			continue
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read %d: %v, want the replica's error once the budget refuses", retried+1, err)
		}
		break
	}
	if retried < 20 || retried >= 40 {
		t.Fatalf("%d reads retried before the budget refused, want 20 to 39", retried)
	}
	// The refused read left its primary expectation unused: a read sent
	// to the primary by hint takes it.
	c.read(t, hint.Primary(context.Background()))
	c.met(t)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c.conn))
	fams := scrape(t, reg)

	n := float64(retried)
	wantSample(t, fams, "rwshard_node_errors_total", l("node", "replica1"), n+1)
	wantSample(t, fams, "rwshard_node_read_retries_total", l("node", "replica1"), n)
	wantSample(t, fams, "rwshard_node_errors_total", l("node", "primary"), 0)
	wantSample(t, fams, "rwshard_node_read_retries_total", l("node", "primary"), 0)
	wantSample(t, fams, "rwshard_retries_total", nil, n)
	wantSample(t, fams, "rwshard_retries_refused_total", nil, 1)
	wantSample(t, fams, "rwshard_queries_total", l("node", "primary"), n+1)
	wantSample(t, fams, "rwshard_primary_reads_total", nil, n+1)
	// With its only replica excluded, each retry is a fallback to the
	// primary.
	wantSample(t, fams, "rwshard_fallbacks_total", nil, n)
	wantSample(t, fams, "rwshard_routes_total", l("reason", "no-healthy-replica"), n)
}

// TestLint: the exposition passes client_golang's lint (names, units,
// suffixes, help), and the deterministic series compare equal to their
// exposition text, help included.
func TestLint(t *testing.T) {
	c := newCluster(t)
	expectRead(c.replica)
	expectWrite(c.primary)
	c.read(t, context.Background())
	c.write(t)
	c.met(t)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c.conn))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	const want = `
# HELP rwshard_queries_total Statements sent to the node.
# TYPE rwshard_queries_total counter
rwshard_queries_total{node="primary"} 1
rwshard_queries_total{node="replica1"} 1
# HELP rwshard_node_primary Whether the node is the one currently taken as primary (1) or not (0).
# TYPE rwshard_node_primary gauge
rwshard_node_primary{node="primary"} 1
rwshard_node_primary{node="replica1"} 0
# HELP rwshard_reads_total Plain reads routed, whichever node served them.
# TYPE rwshard_reads_total counter
rwshard_reads_total 1
# HELP rwshard_primary_reads_total Plain reads the primary served (fallbacks, read-your-writes, hints, max-lag).
# TYPE rwshard_primary_reads_total counter
rwshard_primary_reads_total 0
# HELP rwshard_routes_total Statements routed, by the reason of their final routing decision.
# TYPE rwshard_routes_total counter
rwshard_routes_total{reason="hint-node"} 0
rwshard_routes_total{reason="hint-primary"} 0
rwshard_routes_total{reason="in-transaction"} 0
rwshard_routes_total{reason="locking-read"} 0
rwshard_routes_total{reason="max-lag"} 0
rwshard_routes_total{reason="no-healthy-replica"} 0
rwshard_routes_total{reason="primary-away"} 0
rwshard_routes_total{reason="read-your-writes"} 0
rwshard_routes_total{reason="replica"} 1
rwshard_routes_total{reason="session-pinned"} 0
rwshard_routes_total{reason="session-read"} 0
rwshard_routes_total{reason="starting"} 0
rwshard_routes_total{reason="stored-function"} 0
rwshard_routes_total{reason="temporary-table"} 0
rwshard_routes_total{reason="unknown"} 0
rwshard_routes_total{reason="write"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"rwshard_queries_total", "rwshard_node_primary", "rwshard_reads_total",
		"rwshard_primary_reads_total", "rwshard_routes_total"); err != nil {
		t.Error(err)
	}
}

// TestSideBySide: collectors of two clusters, told apart by a constant
// label, register in one registry and each reports its own cluster; a
// second collector with the same labels is refused.
func TestSideBySide(t *testing.T) {
	orders, users := newCluster(t), newCluster(t)
	for range 2 {
		expectRead(orders.replica)
	}
	expectWrite(users.primary)
	orders.read(t, context.Background())
	orders.read(t, context.Background())
	users.write(t)
	orders.met(t)
	users.met(t)

	reg := prometheus.NewPedanticRegistry()
	for name, c := range map[string]*cluster{"orders": orders, "users": users} {
		if err := reg.Register(metrics.NewCollector(c.conn, metrics.WithConstLabels(prometheus.Labels{"cluster": name}))); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	fams := scrape(t, reg)
	wantSample(t, fams, "rwshard_queries_total", l("cluster", "orders", "node", "replica1"), 2)
	wantSample(t, fams, "rwshard_queries_total", l("cluster", "orders", "node", "primary"), 0)
	wantSample(t, fams, "rwshard_queries_total", l("cluster", "users", "node", "replica1"), 0)
	wantSample(t, fams, "rwshard_queries_total", l("cluster", "users", "node", "primary"), 1)
	wantSample(t, fams, "rwshard_routes_total", l("cluster", "orders", "reason", "replica"), 2)
	wantSample(t, fams, "rwshard_routes_total", l("cluster", "users", "reason", "write"), 1)
	if got, want := len(fams["rwshard_routes_total"].GetMetric()), 2*len(router.Reasons()); got != want {
		t.Errorf("rwshard_routes_total has %d series, want %d", got, want)
	}

	err := reg.Register(metrics.NewCollector(users.conn, metrics.WithConstLabels(prometheus.Labels{"cluster": "orders"})))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Errorf("second collector labelled cluster=orders: %v, want AlreadyRegisteredError", err)
	}
}

// TestConstLabelsMerge: WithConstLabels adds to the labels of an earlier
// one, and leaves the caller's maps alone.
func TestConstLabelsMerge(t *testing.T) {
	c := newCluster(t)
	cluster := prometheus.Labels{"cluster": "orders"}
	col := metrics.NewCollector(c.conn, metrics.WithConstLabels(cluster),
		metrics.WithConstLabels(prometheus.Labels{"region": "eu"}))
	if len(cluster) != 1 {
		t.Errorf("caller's labels changed: %v", cluster)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	fams := scrape(t, reg)
	wantSample(t, fams, "rwshard_reads_total", l("cluster", "orders", "region", "eu"), 0)
}

// TestConstLabelClash: a constant label named like a variable one cannot
// be registered.
func TestConstLabelClash(t *testing.T) {
	c := newCluster(t)
	for _, name := range []string{"node", "reason", "class", "code", "kind"} {
		col := metrics.NewCollector(c.conn, metrics.WithConstLabels(prometheus.Labels{name: "x"}))
		if err := prometheus.NewPedanticRegistry().Register(col); err == nil {
			t.Errorf("const label %q: registered, want an error", name)
		}
	}
}

func TestNamespace(t *testing.T) {
	c := newCluster(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c.conn, metrics.WithNamespace("shop")))
	fams := scrape(t, reg)
	wantSample(t, fams, "shop_queries_total", l("node", "primary"), 0)
	wantSample(t, fams, "shop_routes_total", l("reason", "replica"), 0)
	for name := range fams {
		if !strings.HasPrefix(name, "shop_") {
			t.Errorf("metric %s without the namespace", name)
		}
	}
}

// TestConcurrentScrapes: scrapes taken while statements run see counters
// that never go down, and the last one sees every statement (run with
// -race).
func TestConcurrentScrapes(t *testing.T) {
	const workers, each = 4, 25
	c := newCluster(t)
	c.replica.MatchExpectationsInOrder(false)
	for range workers * each {
		expectRead(c.replica)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c.conn))

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				var name string
				if err := c.db.QueryRow(readSQL, 1).Scan(&name); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last := 0.0
	for scraping := true; scraping; {
		select {
		case <-done:
			scraping = false
		default:
		}
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			m[f.GetName()] = f
		}
		v, _ := sample(m, "rwshard_routes_total", l("reason", "replica"))
		if v < last {
			t.Fatalf("rwshard_routes_total{reason=replica} went down: %v after %v", v, last)
		}
		last = v
	}
	if last != workers*each {
		t.Errorf("rwshard_routes_total{reason=replica} = %v after all reads, want %d", last, workers*each)
	}
	c.met(t)
}

// TestServerErrors: errors the server returned are counted by node and
// number; connection failures are not server errors.
func TestServerErrors(t *testing.T) {
	c := newCluster(t)
	for range 2 {
		c.primary.ExpectExec(writeSQL).WillReturnError(&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"})
	}
	c.primary.ExpectExec(writeSQL).WillReturnError(&mysql.MySQLError{Number: 1213, Message: "Deadlock found"})
	for range 3 {
		if _, err := c.db.Exec(writeSQL); err == nil {
			t.Fatal("write: no error")
		}
	}
	c.met(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c.conn))
	fams := scrape(t, reg)
	wantSample(t, fams, "rwshard_server_errors_total", l("node", "primary", "code", "1062"), 2)
	wantSample(t, fams, "rwshard_server_errors_total", l("node", "primary", "code", "1213"), 1)
	if got := len(fams["rwshard_server_errors_total"].GetMetric()); got != 2 {
		t.Errorf("%d server error series, want 2", got)
	}
	if m := metric(fams, "rwshard_statement_duration_seconds", l("node", "primary", "class", "write")); m.GetHistogram().GetSampleCount() != 3 {
		t.Errorf("failed writes in the histogram: %v", m)
	}
}

func TestNilConnector(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewCollector(nil): no panic")
		}
	}()
	metrics.NewCollector(nil)
}

// The package documentation's one line serves the collector registered
// in Prometheus' default registry.
func TestServeDefaultRegistry(t *testing.T) {
	c := newCluster(t)
	col := metrics.NewCollector(c.conn)
	prometheus.MustRegister(col)
	t.Cleanup(func() { prometheus.Unregister(col) })
	srv := httptest.NewServer(promhttp.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `rwshard_node_up{node="replica1"} 1`) {
		t.Errorf("/metrics lacks rwshard's series:\n%.2000s", body)
	}
}
