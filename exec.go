package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
)

// Statements run at the driver level on a backend connection taken from a
// node's pool (connPool, or a handle given to OpenDB): arguments and results travel unconverted, so types,
// NULLs, errors and column metadata are exactly go-sql-driver's.

// backend is one backend connection checked out of a node's pool. While
// checked out nobody else uses it; dc is valid until release.
type backend struct {
	node *node
	// bc is dc when dc is one of rwshard's own backend connections; nil
	// otherwise.
	bc *backendConn
	pc *poolConn // from the node's own pool (connPool), or
	sc *sql.Conn // from a handle given to OpenDB, with dc got through Raw
	dc driver.Conn
	// raw: a result set of this connection went to database/sql as
	// go-sql-driver's own (the short path's reads, see
	// stmt.QueryContext), which rwshard does not see closed. Until the
	// logical connection is reset (database/sql resets only a connection
	// whose result sets are all closed) one may still be open, unread:
	// released before then, the connection is discarded, never pooled.
	// bounded: node.bounded() for the node's own pool (node.limited),
	// copied here so that the short path's reads do not fetch the node's
	// line for it (cold model: 4 misses fewer per NEW_ORDER-shaped
	// transaction, one per read). Both beside bc, which the short path
	// reads first.
	raw, bounded bool
	grab         func(any) error // b.setConn, bound once (no allocation per use)
	// rows is the result set of a read dispatched to this connection and
	// handed to database/sql (see conn.queryRows): it lives exactly as
	// long as b is checked out, so it costs no allocation of its own.
	// Closing it releases b.
	rows rows
}

var backendPool = sync.Pool{New: func() any {
	b := &backend{}
	b.grab = b.setConn
	return b
}}

func (b *backend) setConn(dc any) error {
	b.dc = dc.(driver.Conn)
	return nil
}

// acquire checks a connection out of the node's pool, one whose session
// variables are vars if an idle one has them (see connPool.get).
func (n *node) acquire(ctx context.Context, vars string) (*backend, error) {
	b := backendPool.Get().(*backend)
	b.node, b.bounded = n, n.limited
	if n.conns != nil {
		pc, err := n.conns.get(ctx, vars)
		if err != nil {
			b.put()
			return nil, err
		}
		b.pc, b.dc = pc, pc.dc
	} else if err := n.handleConn(ctx, b); err != nil {
		b.put()
		return nil, err
	}
	n.inFlight.Add(1)
	if bc, ok := b.dc.(*backendConn); ok {
		n.track(bc, true)
		b.bc = bc
	}
	return b, nil
}

// markBad makes database/sql discard a handle's connection instead of
// pooling it: it broke, or it carries session state nobody else may
// inherit.
var markBad = func(any) error { return driver.ErrBadConn }

// release returns the connection to its pool, or discards it if discard.
func (b *backend) release(discard bool) {
	if b.raw {
		discard = true
	}
	if bc := b.bc; bc != nil {
		b.node.track(bc, false)
		if bc.interrupted.Load() || bc.stale {
			discard = true
		}
	}
	if b.pc != nil {
		b.node.conns.put(b.pc, discard)
	} else {
		if discard {
			_ = b.sc.Raw(markBad)
		}
		_ = b.sc.Close()
	}
	b.node.inFlight.Add(-1)
	b.put()
}

// handleConn checks a connection out of a handle given to OpenDB. The
// driver connection is used after Raw returns, while b holds the
// *sql.Conn: the one place rwshard steps outside Raw's contract, over
// pools the caller built (go-sqlmock's, typically); rwshard's own pools
// (connPool) need no Raw.
func (n *node) handleConn(ctx context.Context, b *backend) error {
	sc, err := n.db.Conn(ctx)
	if err != nil {
		return err
	}
	b.sc = sc
	if err := sc.Raw(b.grab); err != nil {
		sc.Close()
		return err
	}
	return nil
}

func (b *backend) put() {
	b.node, b.pc, b.sc, b.dc, b.bc, b.raw = nil, nil, nil, nil, nil, false
	b.rows = rows{}
	backendPool.Put(b)
}

// mark is where a statement on b starts, for its GTID (trackConn.mark):
// zeros on a connection rwshard does not watch.
func (b *backend) mark() (gen, lost uint64) {
	if b.bc != nil && b.bc.trk != nil {
		return b.bc.trk.mark()
	}
	return 0, 0
}

// watch arms b's session tracker for a statement that may commit, or
// disarms it after (trackConn.armed).
func (b *backend) watch(on bool) {
	if b.bc != nil {
		b.bc.trk.watch(on)
	}
}

// convertArgs converts arguments the way database/sql would for this
// backend connection. rwshard's own CheckNamedValue accepts every value
// unchanged, so conversion happens here, by the driver that will send
// them: go-sql-driver's converter keeps uint64 >= 1<<63, json.RawMessage
// and calls driver.Valuer exactly as it does without rwshard.
func convertArgs(dc driver.Conn, args []driver.NamedValue) ([]driver.NamedValue, error) {
	checker, _ := dc.(driver.NamedValueChecker)
	out := args // converted in place (idempotent); copied if one is removed
	for i := range args {
		// The checker converts args[i] itself: a pointer to a copy would
		// escape through the interface call, one allocation per argument.
		// An argument that is removed or fails is put back as it was.
		nv := &args[i]
		orig := *nv
		err := driver.ErrSkip
		if checker != nil {
			err = checker.CheckNamedValue(nv)
		}
		if err == driver.ErrSkip {
			var v driver.Value
			if v, err = driver.DefaultParameterConverter.ConvertValue(nv.Value); err == nil {
				nv.Value = v
			}
		}
		switch err {
		case nil:
			if len(out) < len(args) { // a copy: an argument was removed
				out = append(out, *nv)
			}
		case driver.ErrRemoveArgument:
			*nv = orig
			if len(out) == len(args) {
				out = append(make([]driver.NamedValue, 0, len(args)), args[:i]...)
			}
		default:
			*nv = orig
			return nil, err
		}
	}
	return out, nil
}

func prepare(ctx context.Context, dc driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := dc.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return dc.Prepare(query)
}

func beginTx(ctx context.Context, dc driver.Conn, opts driver.TxOptions) (driver.Tx, error) {
	if bc, ok := dc.(*backendConn); ok { // rwshard's own: no interface assertion
		return bc.BeginTx(ctx, opts)
	}
	if b, ok := dc.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	if opts.Isolation != 0 || opts.ReadOnly {
		return nil, errors.New("rwshard: the backend driver does not support transaction options")
	}
	return dc.Begin() //nolint:staticcheck // fallback for drivers without BeginTx
}

// validConn, pingConn and resetConn call dc's optional Validator, Pinger
// and SessionResetter; without one, dc is valid and there is nothing to do.
// rwshard's own backend connections, which have all three, are called
// without an interface assertion (a lookup in the assertion's cache).
func validConn(dc driver.Conn) bool {
	if bc, ok := dc.(*backendConn); ok {
		return bc.IsValid()
	}
	v, ok := dc.(driver.Validator)
	return !ok || v.IsValid()
}

func pingConn(ctx context.Context, dc driver.Conn) error {
	if bc, ok := dc.(*backendConn); ok {
		return bc.Ping(ctx)
	}
	if p, ok := dc.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func resetConn(ctx context.Context, dc driver.Conn) error {
	if bc, ok := dc.(*backendConn); ok {
		return bc.ResetSession(ctx)
	}
	if r, ok := dc.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// values turns named values into positional ones for pre-Go 1.8 drivers.
func values(args []driver.NamedValue) []driver.Value {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

func stmtQuery(ctx context.Context, st driver.Stmt, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := st.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	return st.Query(values(args)) //nolint:staticcheck // fallback
}

func stmtExec(ctx context.Context, st driver.Stmt, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := st.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	return st.Exec(values(args)) //nolint:staticcheck // fallback
}

// prep says how a statement of the caller's reaches the backend (see
// conn.prep); the zero value is a text statement whose arguments the
// backend converts.
type prep struct {
	st        *stmt // the caller's prepared statement, nil for a text one
	converted bool  // the arguments are converted already
}

// query runs a statement on dc. Without arguments it uses the text
// protocol; with arguments, the driver's own path (interpolateParams) or a
// prepared statement: cached on rwshard's backend connections (one round
// trip after the first), else prepared and closed with the rows. A
// statement the caller prepared (p.st) always takes the prepared path. A
// non-nil st must be closed after the rows.
func query(ctx context.Context, dc driver.Conn, q string, args []driver.NamedValue, p prep) (rows driver.Rows, st driver.Stmt, err error) {
	if !p.converted {
		if args, err = convertArgs(dc, args); err != nil {
			return nil, nil, err
		}
	}
	if p.st == nil {
		if qc, ok := dc.(driver.QueryerContext); ok {
			rows, err = qc.QueryContext(ctx, q, args)
			if err != driver.ErrSkip {
				return rows, nil, err
			}
		}
	}
	if bc, ok := dc.(*backendConn); ok && bc.stmts != nil {
		cst, err := bc.cached(ctx, q, p.st)
		if err != nil {
			return nil, nil, err
		}
		rows, err = cst.queryRows(ctx, args)
		if staleStmt(err) {
			bc.stmts.drop(q)
		}
		return rows, nil, err
	}
	if st, err = prepare(ctx, dc, q); err != nil {
		return nil, nil, err
	}
	if rows, err = stmtQuery(ctx, st, args); err != nil {
		st.Close()
		return nil, nil, err
	}
	return rows, st, nil
}

// queryValue runs q on dc and returns the first column of its first row
// (text as a string): the one-value queries rwshard sends itself.
func queryValue(ctx context.Context, dc driver.Conn, q string, args []driver.NamedValue) (driver.Value, error) {
	row, err := queryRow(ctx, dc, q, args)
	if err != nil {
		return nil, err
	}
	return row[0], nil
}

// queryRow runs q on dc and returns its first row (at least one value),
// []byte values as strings.
func queryRow(ctx context.Context, dc driver.Conn, q string, args []driver.NamedValue) ([]driver.Value, error) {
	rows, st, err := query(ctx, dc, q, args, prep{})
	if err != nil {
		return nil, err
	}
	v := make([]driver.Value, max(1, len(rows.Columns())))
	err = rows.Next(v)
	rows.Close()
	if st != nil {
		st.Close()
	}
	if err != nil {
		return nil, err
	}
	for i, x := range v {
		if b, ok := x.([]byte); ok {
			v[i] = string(b)
		}
	}
	return v, nil
}

// exec is query's twin for statements without rows.
func exec(ctx context.Context, dc driver.Conn, q string, args []driver.NamedValue, p prep) (res driver.Result, err error) {
	if !p.converted {
		if args, err = convertArgs(dc, args); err != nil {
			return nil, err
		}
	}
	if p.st == nil {
		if ec, ok := dc.(driver.ExecerContext); ok {
			res, err = ec.ExecContext(ctx, q, args)
			if err != driver.ErrSkip {
				return res, err
			}
		}
	}
	if bc, ok := dc.(*backendConn); ok && bc.stmts != nil {
		cst, err := bc.cached(ctx, q, p.st)
		if err != nil {
			return nil, err
		}
		res, err = cst.exec(ctx, args)
		if staleStmt(err) {
			bc.stmts.drop(q)
		}
		return res, err
	}
	st, err := prepare(ctx, dc, q)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return stmtExec(ctx, st, args)
}

// staleStmt reports an execution error after which a cached statement
// must not be reused: anything but an ordinary server error (a duplicate
// key, say), or the server saying the statement is unknown or must be
// prepared again. It inlines: a statement that succeeded makes no call.
func staleStmt(err error) bool { return err != nil && staleErr(err) }

// staleErr is staleStmt for an error.
func staleErr(err error) bool {
	switch serverErrno(err) {
	case 0: // not the server's: the connection, the driver
		return true
	case 1243, 1615: // ER_UNKNOWN_STMT_HANDLER, ER_NEED_REPREPARE
		return true
	}
	return false
}
