package otel_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	rwotel "github.com/rwshard/rwshard/otel"
)

var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// Statements and transactions through rwshard become spans with OTel's
// database attributes and rwshard's own, recorded by the SDK's in-memory
// span recorder.
func TestLabSpans(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	labtest.Setup(t, l, "CREATE TABLE IF NOT EXISTS spans (id INT PRIMARY KEY, secret VARCHAR(20))", "DELETE FROM spans")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cfg, err := rwshard.ParseDSN(labtest.DSN(l, ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = rwotel.NewTracer(rwotel.WithTracerProvider(tp), rwotel.WithSystem("mariadb"))
	c, err := rwshard.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}

	parent, root := tp.Tracer("test").Start(ctx, "request")
	if _, err := db.ExecContext(parent, "/* app */ INSERT INTO spans VALUES (1, 'hunter2')"); err != nil {
		t.Fatal(err)
	}
	var s string
	if err := db.QueryRowContext(parent, "SELECT secret FROM spans WHERE id = ?", 1).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(parent, "INSERT INTO spans VALUES (1, 'again')"); err == nil {
		t.Fatal("duplicate key: no error")
	}
	tx, err := db.BeginTx(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(parent, "UPDATE spans SET secret = 'x' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	root.End()

	spans := rec.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
	}
	if len(byName["INSERT"]) != 2 || len(byName["SELECT"]) != 1 || len(byName["UPDATE"]) != 1 || len(byName["TRANSACTION"]) != 1 {
		t.Fatalf("spans: %v", byName)
	}
	ins := byName["INSERT"][0]
	a := attrs(ins)
	primary := l.Primary().Addr()
	host := primary[:strings.LastIndexByte(primary, ':')]
	for k, want := range map[attribute.Key]string{
		"db.system.name": "mariadb", "db.operation.name": "INSERT", "rwshard.node": "primary",
		"rwshard.role": "primary", "rwshard.reason": "write", "rwshard.kind": "write",
		"server.address": host, "db.namespace": lab.AppDatabase,
	} {
		if got := a[k].AsString(); got != want {
			t.Errorf("INSERT span %s = %q, want %q", k, got, want)
		}
	}
	if q := a["db.query.text"].AsString(); strings.Contains(q, "hunter2") || !strings.Contains(q, "INSERT INTO spans") {
		t.Errorf("db.query.text %q: want the statement, literals redacted", q)
	}
	if a["rwshard.rows_affected"].AsInt64() != 1 || a["server.port"].AsInt64() == 0 {
		t.Errorf("rows affected %v, port %v", a["rwshard.rows_affected"], a["server.port"])
	}
	if ins.SpanKind() != trace.SpanKindClient || ins.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("INSERT span: kind %v, parent %v: want a client span under the request", ins.SpanKind(), ins.Parent().SpanID())
	}

	sel := attrs(byName["SELECT"][0])
	if sel["rwshard.role"].AsString() != "replica" || !strings.HasPrefix(sel["rwshard.node"].AsString(), "replica") {
		t.Errorf("SELECT span ran on %v (%v), want a replica", sel["rwshard.node"], sel["rwshard.role"])
	}

	dup := byName["INSERT"][1]
	if dup.Status().Code != codes.Error || attrs(dup)["db.response.status_code"].AsString() != "1062" ||
		attrs(dup)["error.type"].AsString() != "1062" {
		t.Errorf("duplicate key span: status %v, attrs %v", dup.Status(), attrs(dup))
	}
	if strings.Contains(dup.Status().Description, "again") {
		t.Errorf("status shows the duplicate value: %q", dup.Status().Description)
	}

	txa := attrs(byName["TRANSACTION"][0])
	if !txa["rwshard.committed"].AsBool() || txa["rwshard.node"].AsString() != "primary" {
		t.Errorf("TRANSACTION span: %v", txa)
	}
}

// Without a recording span the tracer does no work beyond starting the
// non-recording span: the statement still runs, no span is kept.
func TestLabNoRecording(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(rec))
	cfg, err := rwshard.ParseDSN(labtest.DSN(l, ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = rwotel.NewTracer(rwotel.WithTracerProvider(tp))
	c, err := rwshard.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %v %v", one, err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans recorded with NeverSample", n)
	}
}
