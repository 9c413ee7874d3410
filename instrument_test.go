package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Tracer and TxTracer that keeps what it saw. The context
// it returns carries a mark, to prove that the statement's End gets the
// context its Start returned.
type recorder struct {
	mu     sync.Mutex
	starts []rwshard.StatementStart
	ends   []rwshard.StatementEnd
	txs    []rwshard.TxEnd
	unmark int // Ends whose context lacked the mark
}

type markKey struct{}

func (r *recorder) StatementStart(ctx context.Context, s rwshard.StatementStart) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, s)
	return context.WithValue(ctx, markKey{}, "stmt")
}

func (r *recorder) StatementEnd(ctx context.Context, e rwshard.StatementEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Value(markKey{}) != "stmt" {
		r.unmark++
	}
	r.ends = append(r.ends, e)
}

func (r *recorder) TxStart(ctx context.Context, s rwshard.TxStart) context.Context {
	return context.WithValue(ctx, markKey{}, "tx")
}

func (r *recorder) TxEnd(ctx context.Context, e rwshard.TxEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Value(markKey{}) != "tx" {
		r.unmark++
	}
	r.txs = append(r.txs, e)
}

func (r *recorder) last() rwshard.StatementEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ends[len(r.ends)-1]
}

// The tracer sees each statement's node, role, reason, kind, redacted
// text, rows affected and error, and each BeginTx transaction; Stats
// carries the latency histograms, server errors by number, pool use and
// event counts.
func TestLabTracerAndMeters(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS traced (id INT PRIMARY KEY, secret VARCHAR(20))", "DELETE FROM traced")
	cfg, err := rwshard.ParseDSN(labDSN(l, ""))
	require.NoError(t, err)
	rec := &recorder{}
	cfg.Tracer = rec
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	require.NoError(t, c.Ready(ctx))

	res, err := db.ExecContext(ctx, "INSERT INTO traced VALUES (1, 'hunter2'), (2, 'swordfish')")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.Equal(t, int64(2), n)
	e := rec.last()
	assert.Equal(t, "primary", e.Node)
	assert.Equal(t, "primary", e.Role)
	assert.Equal(t, "write", e.Reason)
	assert.Equal(t, "write", e.Kind)
	assert.Equal(t, int64(2), e.RowsAffected)
	assert.False(t, strings.Contains(e.Redacted, "hunter2"), "redacted text shows a literal: %s", e.Redacted)
	assert.True(t, e.Duration > 0, "duration %v", e.Duration)
	assert.NoError(t, e.Err)

	var s string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT secret FROM traced WHERE id = ?", 1).Scan(&s))
	e = rec.last()
	assert.Equal(t, "replica", e.Role)
	assert.True(t, strings.HasPrefix(e.Node, "replica"), "read ran on %q", e.Node)
	assert.Equal(t, "read", e.Kind)
	assert.Equal(t, int64(-1), e.RowsAffected)

	_, err = db.ExecContext(ctx, "INSERT INTO traced VALUES (1, 'again')")
	var me *mysql.MySQLError
	require.True(t, errors.As(err, &me) && me.Number == 1062, "want duplicate key, got %v", err)
	e = rec.last()
	assert.True(t, errors.Is(e.Err, err) || e.Err == err, "End's error %v", e.Err)
	assert.Equal(t, "primary", e.Node)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE traced SET secret = 'x' WHERE id = 2")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())

	rec.mu.Lock()
	assert.Equal(t, len(rec.starts), len(rec.ends), "every Start has an End")
	assert.Zero(t, rec.unmark, "End got the context Start returned")
	require.Len(t, rec.txs, 2)
	assert.True(t, rec.txs[0].Commit && rec.txs[0].Node == "primary" && rec.txs[0].Err == nil, "commit traced: %+v", rec.txs[0])
	assert.False(t, rec.txs[1].Commit, "rollback traced: %+v", rec.txs[1])
	rec.mu.Unlock()

	st := c.Stats()
	var prim, reads rwshard.NodeStats
	for _, ns := range st.Nodes {
		if ns.Primary {
			prim = ns
		}
		reads.ReadLatency.Count += ns.ReadLatency.Count
	}
	assert.Equal(t, uint64(1), prim.ServerErrors[1062], "duplicate key counted on the primary: %v", prim.ServerErrors)
	assert.Equal(t, uint64(3), prim.WriteLatency.Count, "two INSERTs and an UPDATE: %+v", prim.WriteLatency)
	assert.True(t, reads.ReadLatency.Count >= 1, "read histogram counted the read")
	assert.Equal(t, len(rwshard.LatencyBounds())+1, len(prim.WriteLatency.Counts))
	assert.True(t, prim.WriteLatency.Sum > 0)
	assert.True(t, prim.Pool.OpenConnections >= 1, "pool: %+v", prim.Pool)
	_, ok := st.Events["node-down"]
	assert.True(t, ok, "every event kind is reported, at 0 too: %v", st.Events)
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// go-sql-driver's own log lines go to the configured slog.Logger with
// rwshard.driverLog=slog: a held connection the server killed is found on
// its next use (a transaction: the primary connection the logical
// connection holds), and go-sql-driver's "closing bad idle connection"
// line arrives at Warn with the node's name.
func TestLabDriverLogToSlog(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	cfg, err := rwshard.ParseDSN(l.Primary().DSN("rwshard.driverLog=slog"))
	require.NoError(t, err)
	var buf syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	var id int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
	_, err = direct(t, l.Primary(), "").ExecContext(ctx, fmt.Sprintf("KILL %d", id))
	require.NoError(t, err)
	require.True(t, assert.Eventually(t, func() bool {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		return strings.Contains(buf.String(), "closing bad idle connection")
	}, 10*time.Second, 50*time.Millisecond), "log: %s", buf.String())
	out := buf.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "source=go-sql-driver")
	assert.Contains(t, out, "node=primary")
}

// The histogram bounds cannot be changed from outside: LatencyBounds
// hands out a copy. (An exported slice, appended to, made every
// observation index past its fixed array of buckets.)
func TestLatencyBoundsAreACopy(t *testing.T) {
	b := rwshard.LatencyBounds()
	require.Len(t, b, 14)
	b[0] = time.Hour
	_ = append(b, time.Hour)
	assert.Equal(t, 500*time.Microsecond, rwshard.LatencyBounds()[0])
	assert.Len(t, rwshard.LatencyBounds(), 14)
}
