// Package otel turns rwshard's Tracer hook into OpenTelemetry spans that
// follow OTel's database semantic conventions.
//
//	cfg, err := rwshard.ParseDSN(dsn)
//	…
//	cfg.Tracer = otel.NewTracer() // the global TracerProvider, or WithTracerProvider
//	c, err := rwshard.NewConnector(cfg)
//	…
//	db := sql.OpenDB(c)
//
// Every statement is a client span named after its operation ("SELECT",
// "INSERT", …) with
//
//	db.system.name      "mysql" (WithSystem for "mariadb")
//	db.operation.name   the statement's first keyword
//	db.query.text       the SQL with its string literals replaced by '?'
//	db.namespace        the database of the node's DSN, when it names one
//	server.address      the node's host; server.port its port
//	db.response.status_code, error.type
//	                    the MySQL error number of a failed statement
//	rwshard.node        the node that ran it ("replica1", "ds_0-primary", …)
//	rwshard.role        "primary" or "replica"
//	rwshard.reason      the routing reason ("replica", "write", "read-your-writes", …)
//	rwshard.kind        the classifier's verdict ("read", "write", "locking-read", …)
//	rwshard.rows_affected, rwshard.causal_wait_seconds, rwshard.retried
//	                    when there are any
//
// A BeginTx transaction is a span named "TRANSACTION" with rwshard.node
// and rwshard.committed. Statements of the transaction are its children
// only when they run with the context BeginTx returned to the tracer,
// which database/sql does not hand back: start a span of your own around
// the transaction to group them. A sharded statement is one span per
// shard unit, each from the data source's connector that ran it.
//
// A failed statement's span has status Error with the server's message
// redacted (quoted values removed), never the raw text.
package otel

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/redact"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/rwshard/rwshard/otel"

// Tracer is an rwshard.Tracer and rwshard.TxTracer that starts
// OpenTelemetry spans. It is safe for concurrent use.
type Tracer struct {
	tracer trace.Tracer
	system attribute.KeyValue
}

var (
	_ rwshard.Tracer   = (*Tracer)(nil)
	_ rwshard.TxTracer = (*Tracer)(nil)
)

// Option configures a Tracer.
type Option func(*options)

type options struct {
	provider trace.TracerProvider
	system   attribute.KeyValue
}

// WithTracerProvider sets the provider of the spans (default: the global
// one, otel.GetTracerProvider, as it is when NewTracer runs).
func WithTracerProvider(p trace.TracerProvider) Option {
	return func(o *options) { o.provider = p }
}

// WithSystem sets db.system.name: "mysql" (the default) or "mariadb".
func WithSystem(name string) Option {
	return func(o *options) { o.system = semconv.DBSystemNameKey.String(name) }
}

// NewTracer returns a Tracer.
func NewTracer(opts ...Option) *Tracer {
	o := options{system: semconv.DBSystemNameMySQL}
	for _, f := range opts {
		f(&o)
	}
	if o.provider == nil {
		o.provider = otel.GetTracerProvider()
	}
	return &Tracer{tracer: o.provider.Tracer(ScopeName), system: o.system}
}

// StatementStart starts the statement's span.
func (t *Tracer) StatementStart(ctx context.Context, s rwshard.StatementStart) context.Context {
	op := operation(s.SQL)
	name := op
	if name == "" {
		name = t.system.Value.AsString()
	}
	ctx, _ = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.system, semconv.DBOperationName(op)))
	return ctx
}

// StatementEnd adds what happened to the span and ends it.
func (t *Tracer) StatementEnd(ctx context.Context, e rwshard.StatementEnd) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		span.End()
		return
	}
	attrs := []attribute.KeyValue{
		semconv.DBQueryText(e.Redacted),
		attribute.String("rwshard.reason", e.Reason),
		attribute.String("rwshard.kind", e.Kind),
	}
	attrs = append(attrs, nodeAttrs(e.Node, e.Role, e.Addr, e.Database)...)
	if e.RowsAffected >= 0 {
		attrs = append(attrs, attribute.Int64("rwshard.rows_affected", e.RowsAffected))
	}
	if e.Waited > 0 {
		attrs = append(attrs, attribute.Float64("rwshard.causal_wait_seconds", e.Waited.Seconds()))
	}
	if e.Retried {
		attrs = append(attrs, attribute.Bool("rwshard.retried", true))
	}
	span.SetAttributes(attrs...)
	fail(span, e.Err)
	span.End()
}

// TxStart starts the transaction's span.
func (t *Tracer) TxStart(ctx context.Context, s rwshard.TxStart) context.Context {
	ctx, _ = t.tracer.Start(ctx, "TRANSACTION", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.system, attribute.Bool("rwshard.read_only", s.ReadOnly)))
	return ctx
}

// TxEnd ends the transaction's span.
func (t *Tracer) TxEnd(ctx context.Context, e rwshard.TxEnd) {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.Bool("rwshard.committed", e.Commit && e.Err == nil))
	span.SetAttributes(nodeAttrs(e.Node, "", e.Addr, "")...)
	fail(span, e.Err)
	span.End()
}

func nodeAttrs(node, role, addr, db string) []attribute.KeyValue {
	var out []attribute.KeyValue
	if node != "" {
		out = append(out, attribute.String("rwshard.node", node))
	}
	if role != "" {
		out = append(out, attribute.String("rwshard.role", role))
	}
	if db != "" {
		out = append(out, semconv.DBNamespace(db))
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		out = append(out, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			out = append(out, semconv.ServerPort(p))
		}
	} else if addr != "" {
		out = append(out, semconv.ServerAddress(addr)) // a unix socket path
	}
	return out
}

// fail marks a span failed: the MySQL error number as the status code and
// error type, the message redacted.
func fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		code := strconv.Itoa(int(me.Number))
		span.SetAttributes(semconv.DBResponseStatusCode(code), semconv.ErrorTypeKey.String(code))
	} else {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
	span.SetStatus(codes.Error, redact.ErrorText(err.Error()))
}

// errorType names a non-server error: rwshard's sentinel or the
// context's error when there is one, else "_OTHER" (semconv's fallback).
func errorType(err error) string {
	for _, s := range []error{rwshard.ErrPrimaryUnavailable, rwshard.ErrOutcomeUnknown, rwshard.ErrNoReplica,
		rwshard.ErrWriteToReplica, rwshard.ErrSplitBrain, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// operation is the first keyword of q, upper case, skipping comments and
// opening parentheses; "" when there is none.
func operation(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n(")
		switch {
		case strings.HasPrefix(q, "/*"):
			end := strings.Index(q, "*/")
			if end < 0 {
				return ""
			}
			q = q[end+2:]
		case strings.HasPrefix(q, "#"), strings.HasPrefix(q, "-- "):
			end := strings.IndexByte(q, '\n')
			if end < 0 {
				return ""
			}
			q = q[end+1:]
		default:
			n := 0
			for n < len(q) && n < 16 && (q[n] >= 'a' && q[n] <= 'z' || q[n] >= 'A' && q[n] <= 'Z') {
				n++
			}
			return strings.ToUpper(q[:n])
		}
	}
}
