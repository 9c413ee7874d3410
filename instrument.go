package rwshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/redact"
	"github.com/rwshard/rwshard/internal/route"
)

// What rwshard measures as statements run: latency histograms, server
// errors by number, causal waits, events; and the Tracer hook. All of it
// is atomic counters on the statement path, no allocation, no lock but on
// the first occurrence of a server error number.

// latencyBounds are the upper bounds of the latency histograms' buckets
// (Prometheus' "le"); a last, unbounded bucket follows. An array, so that
// nothing can change the bounds the histograms were sized by.
var latencyBounds = [...]time.Duration{
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second,
}

// LatencyBounds returns the upper bounds of the latency histograms'
// buckets (Prometheus' "le"), 0.5 ms to 10 s; a last, unbounded bucket
// follows. The slice is the caller's.
func LatencyBounds() []time.Duration { return slices.Clone(latencyBounds[:]) }

// histogram counts latencies in latencyBounds buckets.
type histogram struct {
	sum     atomic.Int64                          // nanoseconds; first, on the line of the fastest buckets
	buckets [len(latencyBounds) + 1]atomic.Uint64 // the last one unbounded
}

func (h *histogram) observe(d time.Duration) {
	h.buckets[bucketOf(d)].Add(1)
	h.sum.Add(int64(d))
}

// bucketOf is the index of d's bucket.
func bucketOf(d time.Duration) int { return bucketIn(latencyBounds[:], d) }

// bucketIn is the index of d's bucket among bounds: the first bound d
// does not exceed, len(bounds) (the unbounded bucket) past the last.
func bucketIn(bounds []time.Duration, d time.Duration) int {
	i := 0
	for i < len(bounds) && d > bounds[i] {
		i++
	}
	return i
}

// localHist is a histogram one goroutine fills, added to a shared one
// later (merge).
type localHist struct {
	sum     int64
	buckets [len(histogram{}.buckets)]uint32
}

// count is the number of durations l holds.
func (l *localHist) count() uint32 {
	var n uint32
	for _, v := range l.buckets {
		n += v
	}
	return n
}

// merge adds l to h.
func (h *histogram) merge(l *localHist) {
	for i, v := range l.buckets {
		if v != 0 {
			h.buckets[i].Add(uint64(v))
		}
	}
	if l.sum != 0 {
		h.sum.Add(l.sum)
	}
}

// Histogram is a snapshot of a latency histogram: Counts[i] statements
// took at most LatencyBounds()[i] (and more than the bound before); the
// last count is beyond the last bound.
type Histogram struct {
	Counts []uint64
	Sum    time.Duration
	Count  uint64
}

func (h *histogram) snapshot() Histogram { return snapshotOf(h.buckets[:], &h.sum) }

// snapshotOf reads a histogram's buckets and sum (nanoseconds).
func snapshotOf(buckets []atomic.Uint64, sum *atomic.Int64) Histogram {
	s := Histogram{Counts: make([]uint64, len(buckets)), Sum: time.Duration(sum.Load())}
	for i := range buckets {
		s.Counts[i] = buckets[i].Load()
		s.Count += s.Counts[i]
	}
	return s
}

// nodeMeters are a node's measurements beyond its health.
type nodeMeters struct {
	reads, writes histogram // statement latency by class: plain reads, the rest (writes, locking reads, session statements, unknown)
	serverErrs    sync.Map  // uint16 → *atomic.Uint64: errors the server returned, by number
	waits         atomic.Uint64
	waitTimeouts  atomic.Uint64
	waitNanos     atomic.Int64
}

// latency records a statement's time until it returned, by class. It
// inlines: one call of observe.
func (m *nodeMeters) latency(k route.Kind, d time.Duration) {
	h := &m.writes
	if k == route.Read {
		h = &m.reads
	}
	h.observe(d)
}

// wait records a causal wait on the node and whether it caught up.
func (m *nodeMeters) wait(d time.Duration, caught bool) {
	m.waits.Add(1)
	m.waitNanos.Add(int64(d))
	if !caught {
		m.waitTimeouts.Add(1)
	}
}

// serverError counts an error the server returned on n.
func (m *nodeMeters) serverError(err error) {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return
	}
	v, ok := m.serverErrs.Load(me.Number)
	if !ok {
		v, _ = m.serverErrs.LoadOrStore(me.Number, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

func (m *nodeMeters) serverErrors() map[uint16]uint64 {
	var out map[uint16]uint64
	m.serverErrs.Range(func(k, v any) bool {
		if out == nil {
			out = map[uint16]uint64{}
		}
		out[k.(uint16)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// Tracer sees every statement and transaction of a connector as it
// happens, the shape of pgx's QueryTracer: Start returns the context the
// statement runs with (a span's), End gets what happened. Set it in
// Config.Tracer; unset, it costs nothing. An implementation must be safe
// for concurrent use. The OpenTelemetry adapter is the module
// github.com/rwshard/rwshard/otel.
type Tracer interface {
	StatementStart(ctx context.Context, s StatementStart) context.Context
	StatementEnd(ctx context.Context, e StatementEnd)
}

// TxTracer, implemented by a Tracer as well, sees BeginTx transactions.
type TxTracer interface {
	TxStart(ctx context.Context, s TxStart) context.Context
	TxEnd(ctx context.Context, e TxEnd)
}

// StatementStart is what is known before a statement is routed.
type StatementStart struct {
	SQL  string // as the caller gave it; redact before exporting (see StatementEnd.Redacted)
	Args int
}

// StatementEnd is what happened to a statement.
type StatementEnd struct {
	// Node ran it ("" when it ran nowhere); Role is "primary" or "replica";
	// Addr is the node's host:port (or socket path; "" under OpenDB) and
	// Database the DSN's database.
	Node, Role, Addr, Database string
	// Reason is the final routing reason ("replica", "write", …); Kind the
	// classifier's verdict ("read", "write", …).
	Reason, Kind string
	// Redacted is the SQL with its string literals replaced by '?'.
	Redacted string
	// RowsAffected of a statement without rows, -1 otherwise or unknown.
	RowsAffected int64
	// Waited is the time a causal read waited for its GTID on the replica
	// (0 without a wait); Retried reports a read run again on another
	// node after a connection failure.
	Waited  time.Duration
	Retried bool
	// Targets are the nodes the plan let a read run on (Explain's
	// targets); empty for a statement with one destination.
	Targets []string
	// Outcome is the judgement of the statement's last attempt: "ok",
	// "not-sent", "refused", "server-error", "broke" (its outcome
	// unknown) or "canceled" (its caller's context ended).
	Outcome string
	Err     error
	// Duration until the statement returned (its rows not yet read).
	Duration time.Duration
}

// TxStart and TxEnd describe a BeginTx transaction.
type TxStart struct {
	ReadOnly  bool
	Isolation int // database/sql's IsolationLevel
}

type TxEnd struct {
	Node     string // "" when the transaction did not begin anywhere
	Addr     string
	Commit   bool // false: rolled back
	Err      error
	Duration time.Duration
}

// logger is Config.Logger, else slog.Default() as it is now.
func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// driverLogger is go-sql-driver's per-connection Logger writing to slog
// (Config.DriverLog), with quoted values redacted as in route logs; l nil
// is slog.Default().
type driverLogger struct {
	l    *slog.Logger
	node string
}

func (d driverLogger) Print(v ...any) {
	l := d.l
	if l == nil {
		l = slog.Default() // as it is when the line is logged
	}
	l.Warn(redact.ErrorText(strings.TrimSpace(fmt.Sprint(v...))), "source", "go-sql-driver", "node", d.node)
}

// idleCapLogger reports, once per node, that the node's wait_timeout caps
// rwshard.connMaxIdleTime: idle connections are closed sooner than
// configured, before the server closes them.
func idleCapLogger(cfg *Config, node string) func(configured, waitTimeout, limit time.Duration) {
	return func(configured, waitTimeout, limit time.Duration) {
		conf := configured.String()
		if configured == 0 {
			conf = "0 (no limit)"
		}
		cfg.logger().Info("rwshard: idle connections closed sooner than rwshard.connMaxIdleTime: the server closes them at wait_timeout",
			"node", node, "connMaxIdleTime", conf, "wait_timeout", waitTimeout, "idle_limit", limit)
	}
}
