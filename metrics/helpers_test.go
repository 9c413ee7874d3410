package metrics_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rwshard/rwshard"
)

const (
	readSQL  = "SELECT name FROM users WHERE id = ?"
	writeSQL = "UPDATE users SET name = ? WHERE id = ?"
)

// cluster is a primary and one replica as go-sqlmock handles behind
// rwshard.OpenDB: health probes are off, so the mocks see only the test's
// statements. The nodes are named "primary" and "replica1".
type cluster struct {
	db               *sql.DB
	conn             *rwshard.Connector
	primary, replica sqlmock.Sqlmock
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	opt := sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual)
	pdb, pm, err := sqlmock.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	rdb, rm, err := sqlmock.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	db, err := rwshard.OpenDB(pdb, []*sql.DB{rdb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		pdb.Close()
		rdb.Close()
	})
	conn, err := rwshard.ConnectorOf(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{db: db, conn: conn, primary: pm, replica: rm}
}

// read runs one plain read; with hint.Primary in ctx it goes to the
// primary, and the caller must have set the expectation there.
func (c *cluster) read(t *testing.T, ctx context.Context) {
	t.Helper()
	var name string
	if err := c.db.QueryRowContext(ctx, readSQL, 1).Scan(&name); err != nil {
		t.Fatalf("read: %v", err)
	}
}

func (c *cluster) write(t *testing.T) {
	t.Helper()
	if _, err := c.db.Exec(writeSQL, "ada", 1); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func expectRead(m sqlmock.Sqlmock) {
	m.ExpectQuery(readSQL).WithArgs(1).WillReturnRows(sqlmock.NewRows([]string{"name"}).AddRow("ada"))
}

func expectWrite(m sqlmock.Sqlmock) {
	m.ExpectExec(writeSQL).WithArgs("ada", 1).WillReturnResult(sqlmock.NewResult(0, 1))
}

func (c *cluster) met(t *testing.T) {
	t.Helper()
	if err := c.primary.ExpectationsWereMet(); err != nil {
		t.Errorf("primary: %v", err)
	}
	if err := c.replica.ExpectationsWereMet(); err != nil {
		t.Errorf("replica: %v", err)
	}
}

// scrape serves g over HTTP as a Prometheus server would scrape it and
// parses the text exposition.
func scrape(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want text/plain", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return fams
}

// metric returns the sample of family name whose labels are exactly
// want, or nil.
func metric(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
next:
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

// sample returns the value of the sample of family name whose labels are
// exactly want, and whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	m := metric(fams, name, want)
	if m == nil {
		return 0, false
	}
	switch fams[name].GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	default:
		return m.GetUntyped().GetValue(), true
	}
}

// wantSample fails unless the sample exists with value v.
func wantSample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string, v float64) {
	t.Helper()
	got, ok := sample(fams, name, labels)
	switch {
	case !ok:
		t.Errorf("%s%v: no sample", name, labels)
	case got != v:
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// l builds a label set from name, value pairs.
func l(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
