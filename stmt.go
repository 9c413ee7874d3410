package rwshard

import (
	"context"
	"database/sql/driver"

	"github.com/rwshard/rwshard/internal/route"
)

var (
	_ driver.Stmt             = (*stmt)(nil)
	_ driver.StmtExecContext  = (*stmt)(nil)
	_ driver.StmtQueryContext = (*stmt)(nil)
)

// stmt is a prepared statement as database/sql sees it. It is routed on
// every execution, like any statement, and runs as a server-side prepared
// statement on the chosen backend connection, prepared there once and kept
// in the connection's statement cache: a prepared read costs one round trip.
type stmt struct {
	c *conn
	// What its executions learn for the next ones (database/sql runs a
	// driver statement under its connection's lock, so no other lock is
	// needed), first what every execution reads, on the statement's first
	// cache line: the backend connection and cache entry of the last
	// execution (backendConn.cached) and what the short path needs of the
	// routes it remembers in a BeginTx transaction (short[1] when the
	// session is pinned, see shortRoute).
	bc    *backendConn
	ent   *cachedStmt
	short [2]shortInfo
	// routes[i], once set, is what route decided for the statement in
	// connection state i (see stateIndex) without a hint in the context:
	// an execution in that state is routed the same way (see route for
	// what is not remembered). Allocated for the states the statement
	// runs in only: most run in one or two of the four.
	routes [4]*routed
	q      string
	// The classifier's answer for q.
	cls        route.Class
	classified bool
	// text: not a prepared statement but a unit of a sharded statement,
	// whose class the sharding module gave (unitStmt), run as text.
	text bool
}

// unitStmt carries a unit of a sharded statement through the statement
// path: its class as the sharding module found it, and whether it runs
// as a prepared statement.
func unitStmt(c *conn, q string, cls route.Class, prepared bool) *stmt {
	if c.cl.tag != nil {
		cls.Tag = c.cl.tag(q, cls) // the pool rule of the unit's text
	}
	return &stmt{c: c, q: q, cls: cls, classified: true, text: !prepared}
}

// remember keeps a copy of r as the statement's route in state st.
func (s *stmt) remember(st route.State, r *routed) {
	kept := *r
	s.routes[stateIndex(st)] = &kept
	if st.InTx {
		s.short[b2i(st.Pinned)] = shortInfoOf(&kept)
	}
}

// kept is the route the statement remembers for state st, or nil.
func (s *stmt) kept(st route.State) *routed { return s.routes[stateIndex(st)] }

// stateIndex numbers the four router states.
func stateIndex(st route.State) int {
	i := 0
	if st.InTx {
		i |= 1
	}
	if st.Pinned {
		i |= 2
	}
	return i
}

// Close does nothing: server-side statements belong to the backend
// connections' caches.
func (s *stmt) Close() error { return nil }

// NumInput returns -1: the server checks the argument count.
func (s *stmt) NumInput() int { return -1 }

// ExecContext and QueryContext run the short path's statements (see
// shortRoute) themselves: the backend's prepared statement is called
// from the frame database/sql called (shortTimed's between for the one
// in about shortTimedEvery that is timed), and what runs before it and
// after its answer inlines, but for the wrapper of rows that need one.
// On cores the servers share, every function and frame of rwshard's a
// statement passes through is fetched again (scripts/txshape-cachegrind):
// the four lines that begin a statement are written out in both, as
// together they are too large to inline.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (res driver.Result, err error) {
	c := s.c
	si := s.shortRoute(ctx, len(args))
	if si == nil {
		return c.exec(ctx, s.q, args, s)
	}
	c.argsChecked = false // consumed, as prep does
	c.short.on(c, c.sess.node, si.reason)
	s.bc.stmts.stamp(s.ent) // its hit is the tally's
	if c.short.due(si.latencyClass()) {
		res, _, err = s.shortTimed(ctx, si, args, false)
	} else {
		res, err = s.ent.execer.ExecContext(ctx, args)
	}
	if err != nil {
		return nil, s.shortFailed(ctx, si, err)
	}
	c.short.count(si)
	if si.write && c.ryw {
		c.pendInTx() // wrote, in a transaction
	}
	return res, nil
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (rows driver.Rows, err error) {
	c := s.c
	si := s.shortRoute(ctx, len(args))
	if si == nil {
		return c.queryRows(ctx, s.q, args, s)
	}
	c.argsChecked = false // consumed, as prep does
	c.short.on(c, c.sess.node, si.reason)
	s.bc.stmts.stamp(s.ent) // its hit is the tally's
	if c.short.due(si.latencyClass()) {
		_, rows, err = s.shortTimed(ctx, si, args, true)
	} else {
		rows, err = s.ent.queryer.QueryContext(ctx, args)
	}
	if err != nil {
		return nil, s.shortFailed(ctx, si, err)
	}
	c.short.count(si)
	if si.write || c.sess.bounded || c.cl.holds != nil {
		// A write's rows (INSERT … RETURNING) record it once closed; a
		// bounded pool gets its connection back at the transaction's
		// end, once its rows are closed.
		return c.heldRows(ctx, s.q, args, rows, nil, si.write, 0, 0), nil
	}
	// A read's rows go to database/sql as go-sql-driver's own, every
	// optional interface of theirs, without a wrapper to close: in the
	// transaction the connection is held whether they are open or not,
	// and after it the logical connection keeps it (the primary's
	// unbounded pool, see unpinIdle) until database/sql resets it, when
	// they are closed; released before (the node stopped being the
	// primary), it is discarded (backend.raw).
	c.sess.raw = true
	return rows, nil
}

// Exec implements the pre-context driver.Stmt method; its arguments come
// unconverted.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	s.c.argsChecked = false
	return s.ExecContext(context.Background(), named(args))
}

// Query implements the pre-context driver.Stmt method.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	s.c.argsChecked = false
	return s.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
