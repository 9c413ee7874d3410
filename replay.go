package rwshard

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// Transaction replay (Config.TxReplay), after MaxScale's
// transaction_replay: the statements of an open BeginTx transaction are
// kept, each with a checksum of what the caller was given (rows read,
// rows affected, last insert id). When the transaction's connection is
// lost before COMMIT — the primary crashed, the network broke, or a
// switchover made the node read-only — rwshard waits for a usable primary
// (within WritePause), begins the transaction there, runs the statements
// again and compares every checksum. If all match, the transaction
// continues as if nothing happened; if not, or if the log overflowed, it
// fails with *ReplayError. A COMMIT whose answer was lost is never
// replayed: its outcome is unknown (ErrOutcomeUnknown).

// ErrReplayRefused: a transaction whose connection was lost could not be
// replayed (see ReplayError for why); nothing of it was committed.
var ErrReplayRefused = errors.New("transaction replay refused")

// ReplayError says why a transaction could not be replayed.
type ReplayError struct {
	Node   string // the node the replay ran on ("" if none was reached)
	Reason string // "log full", "result differs", "rows still open", …
	// Statement is the one whose replayed result differed (redacted).
	Statement string
	// Err is what broke the original connection, or the replay's own
	// error.
	Err error
}

func (e *ReplayError) Error() string {
	s := "rwshard: " + ErrReplayRefused.Error() + ": " + e.Reason
	if e.Statement != "" {
		s += " at " + e.Statement
	}
	if e.Node != "" {
		s += " (on " + e.Node + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ReplayError) Unwrap() []error { return []error{ErrReplayRefused, e.Err} }

// txLog is the replay log of one transaction.
type txLog struct {
	opts    driver.TxOptions
	entries []*txEntry
	bytes   int
	full    bool // over ReplayLimit: this transaction cannot be replayed
}

// txEntry is one statement of the transaction and what it returned.
type txEntry struct {
	q      string
	args   []driver.NamedValue
	query  bool
	sum    uint64         // exec: rows affected and last insert id
	h      *xxhash.Digest // query: the rows the caller read
	rows   int            // query: rows the caller read
	eof    bool           // query: the caller read to the end
	closed bool           // query: the rows are closed; an open result cannot be replayed
}

// replayBytes bounds the statements and arguments one log keeps.
const replayBytes = 1 << 20

// record adds a statement to the log; nil when the log is full.
func (l *txLog) record(q string, args []driver.NamedValue, query bool, limit int) *txEntry {
	if l.full {
		return nil
	}
	size := len(q)
	kept := make([]driver.NamedValue, len(args))
	for i, a := range args {
		if b, ok := a.Value.([]byte); ok {
			a.Value = append([]byte(nil), b...)
			size += len(b)
		}
		kept[i] = a
		size += 16
	}
	if len(l.entries) >= limit || l.bytes+size > replayBytes {
		l.full, l.entries = true, nil
		return nil
	}
	l.bytes += size
	e := &txEntry{q: q, args: kept, query: query}
	if query {
		e.h = xxhash.New()
	}
	l.entries = append(l.entries, e)
	return e
}

// resultSum is the checksum of an exec's result.
func resultSum(res driver.Result) uint64 {
	var buf [16]byte
	n, _ := res.RowsAffected()
	id, _ := res.LastInsertId()
	binary.LittleEndian.PutUint64(buf[:8], uint64(n))
	binary.LittleEndian.PutUint64(buf[8:], uint64(id))
	return xxhash.Sum64(buf[:])
}

// fold adds one row the caller read to the entry's checksum.
func (e *txEntry) fold(dest []driver.Value, err error) {
	if err == io.EOF {
		e.eof = true
		return
	}
	if err != nil {
		return
	}
	e.rows++
	foldRow(e.h, dest)
}

func foldRow(h *xxhash.Digest, dest []driver.Value) {
	var buf [9]byte
	for _, v := range dest {
		switch x := v.(type) {
		case nil:
			buf[0] = 0
			h.Write(buf[:1])
		case int64:
			buf[0] = 1
			binary.LittleEndian.PutUint64(buf[1:], uint64(x))
			h.Write(buf[:])
		case uint64:
			buf[0] = 2
			binary.LittleEndian.PutUint64(buf[1:], x)
			h.Write(buf[:])
		case float64:
			buf[0] = 3
			binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(x))
			h.Write(buf[:])
		case float32:
			buf[0] = 3
			binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(float64(x)))
			h.Write(buf[:])
		case bool:
			buf[0], buf[1] = 4, 0
			if x {
				buf[1] = 1
			}
			h.Write(buf[:2])
		case []byte:
			buf[0] = 5
			binary.LittleEndian.PutUint64(buf[1:], uint64(len(x)))
			h.Write(buf[:])
			h.Write(x)
		case string:
			buf[0] = 5
			binary.LittleEndian.PutUint64(buf[1:], uint64(len(x)))
			h.Write(buf[:])
			h.WriteString(x)
		case time.Time:
			buf[0] = 6
			binary.LittleEndian.PutUint64(buf[1:], uint64(x.UnixNano()))
			h.Write(buf[:])
		default:
			buf[0] = 7
			h.Write(buf[:1])
			h.WriteString(fmt.Sprint(x))
		}
	}
}

// replayOn rebuilds the transaction on the primary after its connection
// was lost with cause: a new connection (waiting for a usable primary up
// to WritePause), BEGIN with the same options, every logged statement
// again with its result compared. On success c.sess and c.tx are the new
// ones. On failure the logical connection is broken and the error says
// why.
func (t *txn) replayOn(ctx context.Context, cause error) error {
	c := (*conn)(t)
	l := c.replay
	old := c.sess
	if old != nil {
		switch {
		case readOnlyRejection(cause):
			c.cl.mon.ReadOnly(old.node.index) // a switchover: rediscover
		case errors.Is(cause, errWriterMoved) || c.cl.certFailed(cause):
			// the node is fine; the transaction goes elsewhere or again
		default:
			c.cl.mon.Failure(old.node.index, cause)
		}
		old.release(true)
		c.sess = nil
	}
	c.tx = nil
	fail := func(node, reason, stmt string, err error) error {
		c.cl.replays.refused.Add(1)
		c.cl.mon.Emit(health.Event{Kind: health.ReplayRefused, Node: node, Detail: reason})
		if c.sess != nil {
			c.sess.release(true)
			c.sess = nil
		}
		c.tx, c.replay, c.broken = nil, nil, true
		return &ReplayError{Node: node, Reason: reason, Statement: stmt, Err: err}
	}
	if l.full {
		return fail("", fmt.Sprintf("more than %d statements or %d bytes (rwshard.replayLimit)", c.cl.cfg.ReplayLimit, replayBytes), "", cause)
	}
	for _, e := range l.entries {
		if e.query && !e.closed && !e.eof {
			return fail("", "a result set of the transaction was still being read", quote(e.q), cause)
		}
	}
	r := routed{cls: route.Class{Kind: route.Write, Effect: route.TxBegin}}
	p := plan{r: r, ok: true, reason: router.ReasonInTransaction}
	var tx driver.Tx
	e := exe{c: c, q: "BEGIN"}
	b, err := e.runPrimary(ctx, &p, router.ReasonInTransaction, func(dc driver.Conn) (err error) {
		tx, err = beginTx(ctx, dc, l.opts)
		return err
	})
	if err != nil {
		return fail("", "no primary to replay on", "", err)
	}
	c.sess, c.tx = b, tx
	for _, e := range l.entries {
		if err := replayEntry(ctx, b.dc, e); err != nil {
			reason := "result differs"
			if !errors.Is(err, errReplayDiffers) {
				reason = "statement failed on replay"
			}
			return fail(b.node.name, reason, quote(e.q), err)
		}
	}
	c.cl.replays.done.Add(1)
	c.cl.mon.Emit(health.Event{Kind: health.TxReplayed, Node: b.node.name,
		Detail: fmt.Sprintf("%d statements replayed after: %v", len(l.entries), cause)})
	return nil
}

// notPrimaryComponent reports error 1047 from a Galera node outside the
// Primary component (WSREP has not yet prepared node for application
// use): the statement did not run.
func (cl *cluster) notPrimaryComponent(err error) bool {
	return cl.galera && serverErrno(err) == 1047
}

// certFailed reports a Galera certification failure (or a local
// transaction aborted by a replicated one): error 1213, the transaction
// rolled back, to run again.
func (cl *cluster) certFailed(err error) bool {
	return cl.galera && serverErrno(err) == 1213
}

var errReplayDiffers = errors.New("the replayed result differs from what the caller was given")

// replayEntry runs one logged statement again and compares its result.
func replayEntry(ctx context.Context, dc driver.Conn, e *txEntry) error {
	if !e.query {
		res, err := exec(ctx, dc, e.q, e.args, prep{})
		if err != nil {
			return err
		}
		if resultSum(res) != e.sum {
			return errReplayDiffers
		}
		return nil
	}
	rows, st, err := query(ctx, dc, e.q, e.args, prep{})
	if err != nil {
		return err
	}
	defer func() {
		rows.Close()
		if st != nil {
			st.Close()
		}
	}()
	h := xxhash.New()
	dest := make([]driver.Value, len(rows.Columns()))
	n := 0
	for ; n < e.rows; n++ {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				return errReplayDiffers
			}
			return err
		}
		foldRow(h, dest)
	}
	if e.eof {
		if err := rows.Next(dest); err != io.EOF {
			return errReplayDiffers
		}
	}
	if h.Sum64() != e.h.Sum64() {
		return errReplayDiffers
	}
	return nil
}
