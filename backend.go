package rwshard

import (
	"cmp"
	"context"
	"database/sql/driver"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Backend connections: what each node's pool (connPool) holds when
// rwshard opened the node itself. A backendConn is go-sql-driver's
// connection plus a bounded cache of prepared statements, so that a
// parameterized statement costs one round trip after its first execution
// on that connection (pgx keeps such a cache per connection too).

var (
	_ driver.Connector = (*nodeConnector)(nil)

	_ driver.Conn               = (*backendConn)(nil)
	_ driver.ConnPrepareContext = (*backendConn)(nil)
	_ driver.ConnBeginTx        = (*backendConn)(nil)
	_ driver.QueryerContext     = (*backendConn)(nil)
	_ driver.ExecerContext      = (*backendConn)(nil)
	_ driver.Pinger             = (*backendConn)(nil)
	_ driver.SessionResetter    = (*backendConn)(nil)
	_ driver.Validator          = (*backendConn)(nil)
	_ driver.NamedValueChecker  = (*backendConn)(nil)
)

// nodeConnector opens backend connections to one node.
type nodeConnector struct {
	inner     driver.Connector // go-sql-driver/mysql's
	timeout   time.Duration    // bounds dial and handshake together
	cacheSize int
	stats     *stmtStats // the node's statement cache counters
	// track: statements' connections ask the server to report last_gtid
	// (sessiontrack.go); the probes' do not need it.
	track bool
	// wait is the wait_timeout a new connection's session gets when it
	// is known without asking the connection (0: ask it), for the pool
	// to close the connection first (connPool.idleLimit); nil for
	// connections outside the node's pool.
	wait func() time.Duration
}

// stmtStats counts the statement caches of one node's connections.
type stmtStats struct {
	hits, misses, evictions atomic.Uint64
}

func (nc *nodeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if nc.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, nc.timeout)
		defer cancel()
	}
	dialed := &dialedConn{}
	c, err := nc.inner.Connect(context.WithValue(ctx, dialedKey{}, dialed))
	if err != nil {
		return nil, err
	}
	bc := newBackendConn(c, dialed.conn)
	_, bc.mysql = nc.inner.Driver().(*mysql.MySQLDriver)
	if bc.trk != nil && !nc.track {
		bc.trk.state = trkOff // nothing to watch
	}
	if nc.track && bc.trk != nil && bc.trk.state != trkOff {
		// Appended to what the DSN or the server set: nobody else reads
		// the tracker on this connection.
		_, err := bc.ExecContext(ctx, "SET SESSION session_track_system_variables ="+
			" CONCAT_WS(',', NULLIF(@@session.session_track_system_variables, ''), 'last_gtid')", nil)
		if err != nil {
			bc.Close()
			return nil, err
		}
		bc.trk.on.Store(true)
	}
	if nc.wait != nil {
		// The session's value: what the DSN's parameters set, else the
		// server's global wait_timeout (go-sql-driver does not ask for
		// CLIENT_INTERACTIVE, so interactive_timeout never applies),
		// which the probes read; without probes, one round trip here.
		bc.waitTimeout = nc.wait()
		if bc.waitTimeout == 0 {
			wt, err := bc.waitTimeoutOf(ctx)
			if err != nil {
				bc.Close()
				return nil, err
			}
			bc.waitTimeout = wt
		}
	}
	if nc.cacheSize > 0 {
		bc.stmts = newStmtCache(nc.cacheSize, nc.stats)
	}
	return bc, nil
}

// waitTimeoutOf reads the session's wait_timeout (0: none reported).
func (bc *backendConn) waitTimeoutOf(ctx context.Context) (time.Duration, error) {
	v, err := queryValue(ctx, bc, "SELECT @@session.wait_timeout", nil)
	if err != nil {
		return 0, err
	}
	var secs float64
	switch x := v.(type) {
	case string:
		secs, err = strconv.ParseFloat(x, 64)
	case int64:
		secs = float64(x)
	case uint64:
		secs = float64(x)
	}
	if err != nil || secs <= 0 {
		return 0, nil // nothing rwshard can use: the configured idle time alone
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func (bc *backendConn) serverWaitTimeout() time.Duration { return bc.waitTimeout }

// sessionWait returns nodeConnector.wait for a node's pool: the DSN's
// wait_timeout parameter (go-sql-driver sets it on every connection),
// else probed, the node's global value as its probes last read it.
func sessionWait(mc *mysql.Config, probed *atomic.Int64) func() time.Duration {
	if v, ok := mc.Params["wait_timeout"]; ok {
		secs, err := strconv.ParseFloat(strings.Trim(v, `'"`), 64)
		d := time.Duration(secs * float64(time.Second))
		if err != nil || d <= 0 {
			d = 0 // an expression: ask each connection
		}
		return func() time.Duration { return d }
	}
	return func() time.Duration { return time.Duration(probed.Load()) }
}

// idleSince is when the connection last read or wrote (now when unknown):
// one a logical connection held without using it has been idle since its
// last statement, not since its release.
func (bc *backendConn) idleSince(now time.Time) time.Time {
	if bc.trk == nil || bc.trk.used == 0 {
		return now
	}
	if t := clockBase.Add(bc.trk.used); t.Before(now) {
		return t
	}
	return now
}

func (nc *nodeConnector) Driver() driver.Driver { return nc.inner.Driver() }

// backendConn wraps one go-sql-driver connection. Only one goroutine uses
// it at a time (the pool hands it out exclusively), so the cache needs
// no lock.
type backendConn struct {
	// What every statement on the connection reads comes first, on one
	// cache line: the driver connection's argument checker (every
	// argument), whether it is go-sql-driver's, the statement cache and
	// the session variables applied.
	checker driver.NamedValueChecker
	// mysql: the connection is go-sql-driver's, whose conversion of the
	// plain argument types convertPlain does.
	mysql bool
	stmts *stmtCache // nil: no caching
	// Session variables applied by rwshard (see applyVars), and those whose
	// original value is saved in @__rwshard_<name>; stale: a SET of them
	// failed, the state is unknown, discard the connection. Used by the
	// goroutine that holds the connection only.
	vars  sessionVars
	saved map[string]bool
	stale bool

	driver.Conn
	// The driver connection's other optional interfaces that run on every
	// statement, asserted once (nil: it has not got one), as checker; the
	// others are asserted where they are used, once per transaction or
	// checkout.
	queryer driver.QueryerContext
	execer  driver.ExecerContext
	// And those that run once per transaction or checkout, asserted once
	// too, so that its methods call go-sql-driver's without a second
	// assertion.
	validator driver.Validator
	pinger    driver.Pinger
	resetter  driver.SessionResetter
	beginner  driver.ConnBeginTx

	// net is the connection's socket (see dialer), to interrupt a
	// statement in flight on a node that health took out of rotation;
	// nil on a network rwshard does not dial itself.
	net         net.Conn
	interrupted atomic.Bool // its socket was closed under it: discard it
	// waitTimeout is the session's wait_timeout, read at connect (0:
	// unknown): the pool closes the connection before the server does.
	waitTimeout time.Duration
	// trk is net when rwshard dialed it: it reports the GTIDs of the
	// connection's commits (sessiontrack.go).
	trk *trackConn
}

// newBackendConn wraps c, whose socket is nc (nil: unknown).
func newBackendConn(c driver.Conn, nc net.Conn) *backendConn {
	bc := &backendConn{Conn: c, net: nc}
	bc.trk, _ = nc.(*trackConn)
	bc.checker, _ = c.(driver.NamedValueChecker)
	bc.queryer, _ = c.(driver.QueryerContext)
	bc.execer, _ = c.(driver.ExecerContext)
	bc.validator, _ = c.(driver.Validator)
	bc.pinger, _ = c.(driver.Pinger)
	bc.resetter, _ = c.(driver.SessionResetter)
	bc.beginner, _ = c.(driver.ConnBeginTx)
	return bc
}

// interrupt closes the socket under a statement in flight: go-sql-driver
// returns at once instead of waiting on a silent network.
func (bc *backendConn) interrupt() {
	if bc.net != nil && bc.interrupted.CompareAndSwap(false, true) {
		_ = bc.net.Close()
	}
}

// dialedKey carries a *dialedConn in the context of one Connect, for
// dialer to fill in.
type dialedKey struct{}

type dialedConn struct{ conn net.Conn }

// dialer wraps how go-sql-driver dials a node (dial, a user's DialFunc, or
// nil for net.Dialer) to learn each connection's socket.
func dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if dial != nil {
			c, err = dial(ctx, network, addr)
		} else {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		if d, ok := ctx.Value(dialedKey{}).(*dialedConn); ok {
			t := newTrackConn(c)
			d.conn = t
			return t, nil
		}
		return c, nil
	}
}

// cached returns a prepared statement for query, preparing it on a miss.
// When the server has no room for another prepared statement (1461,
// max_prepared_stmt_count, shared by every client of the server), this
// connection's cache gives back half of its statements and the query is
// prepared once more; if that fails too, the caller runs it uncached.
//
// ps, the caller's prepared statement that runs query (nil for a text
// statement), remembers the cache entry: its next execution on this
// connection skips the lookup by text (a hash and a comparison of the
// whole text, which for a multi-row INSERT is kilobytes).
func (bc *backendConn) cached(ctx context.Context, query string, ps *stmt) (*cachedStmt, error) {
	if ps != nil && ps.bc == bc && ps.ent.live {
		bc.stmts.touch(ps.ent)
		return ps.ent, nil
	}
	return bc.lookup(ctx, query, ps)
}

// lookup is cached by text: ps does not know its entry on bc.
func (bc *backendConn) lookup(ctx context.Context, query string, ps *stmt) (*cachedStmt, error) {
	e := bc.stmts.get(query)
	if e == nil {
		st, err := prepare(ctx, bc.Conn, query)
		if tooManyStatements(err) && bc.stmts.shrink() {
			st, err = prepare(ctx, bc.Conn, query)
		}
		if err != nil {
			return nil, err
		}
		e = bc.stmts.put(query, st)
	}
	if ps != nil {
		ps.bc, ps.ent = bc, e
	}
	return e, nil
}

// tooManyStatements reports error 1461: the server's
// max_prepared_stmt_count is reached.
func tooManyStatements(err error) bool {
	return serverErrno(err) == 1461
}

func (bc *backendConn) Close() error {
	if bc.stmts != nil {
		bc.stmts.closeAll()
	}
	return bc.Conn.Close()
}

func (bc *backendConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return prepare(ctx, bc.Conn, query)
}

func (bc *backendConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if bc.beginner != nil {
		return bc.beginner.BeginTx(ctx, opts)
	}
	return beginTx(ctx, bc.Conn, opts)
}

func (bc *backendConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if bc.queryer != nil {
		return bc.queryer.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (bc *backendConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if bc.execer != nil {
		return bc.execer.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (bc *backendConn) Ping(ctx context.Context) error {
	if bc.pinger != nil {
		return bc.pinger.Ping(ctx)
	}
	return nil
}

func (bc *backendConn) ResetSession(ctx context.Context) error {
	if bc.resetter != nil {
		return bc.resetter.ResetSession(ctx)
	}
	return nil
}

func (bc *backendConn) IsValid() bool {
	if bc.stale || bc.interrupted.Load() {
		return false
	}
	return bc.validator == nil || bc.validator.IsValid()
}

func (bc *backendConn) CheckNamedValue(nv *driver.NamedValue) error {
	if bc.checker != nil {
		return bc.convert(nv)
	}
	return driver.ErrSkip
}

// convert converts an argument as the driver connection does, the plain
// types without its converter on go-sql-driver's (convertPlain); bc.checker
// must be set.
func (bc *backendConn) convert(nv *driver.NamedValue) error {
	if bc.mysql && convertPlain(nv) {
		return nil
	}
	return bc.checker.CheckNamedValue(nv)
}

// convertPlain converts an argument of a plain type as go-sql-driver's
// converter (its CheckNamedValue) does, and reports false for any other
// type: a driver.Value as it is, int and int32 to int64, uint and uint32
// to uint64 (go-sql-driver sends those as they are). Only these exact
// types: a named type may be a driver.Valuer; the rarer sizes are left to
// go-sql-driver.
func convertPlain(nv *driver.NamedValue) bool {
	// The commonest first, compared with their types one by one: a switch
	// of all of them jumps through a table indexed by the type's hash,
	// which reads the type's descriptor and the table, and spreads its
	// cases over the function's cache lines.
	if v, ok := nv.Value.(int); ok {
		nv.Value = int64(v)
		return true
	}
	if _, ok := nv.Value.(string); ok {
		return true
	}
	return convertOther(nv)
}

// convertOther is convertPlain for the types after int and string.
func convertOther(nv *driver.NamedValue) bool {
	switch v := nv.Value.(type) {
	case nil, int64, []byte, float64, bool, time.Time, uint64:
	case int32:
		nv.Value = int64(v)
	case uint:
		nv.Value = uint64(v)
	case uint32:
		nv.Value = uint64(v)
	default:
		return false
	}
	return true
}

// stmtCache is a bounded LRU of prepared statements keyed by SQL text.
// A hit stamps its entry with the cache's clock (one store in the entry
// the hit reads anyway, where a linked list would rewrite three of them);
// the least recently used entry is the one with the oldest stamp, found in
// one pass over the cache when a miss finds it full: that miss costs a
// prepare round trip anyway.
type stmtCache struct {
	clock uint64 // advanced by every use
	size  int
	m     map[string]*cachedStmt
	stats *stmtStats
	// Padding to a cache line of its own (see cachedStmt): every
	// execution advances clock.
	_ [32]byte
}

type cachedStmt struct {
	// What an execution reads and writes, on the entry's first cache line.
	live bool   // false once evicted, dropped or closed
	used uint64 // the cache's clock at its last use
	// stmt's context methods, asserted once (contextStmt's for a stmt
	// that has not got them)
	execer  driver.StmtExecContext
	queryer driver.StmtQueryContext
	stmt    driver.Stmt
	query   string
	// Padding to 128 bytes, a size the allocator aligns to its own cache
	// lines: every execution writes used, and the entries of connections
	// that run on other cores, prepared at the same moment, can be
	// adjacent in memory; sharing a line, it would be handed back and
	// forth between the cores (false sharing; not measured apart).
	_ [48]byte
}

func newStmtCache(size int, stats *stmtStats) *stmtCache {
	if stats == nil {
		stats = &stmtStats{}
	}
	return &stmtCache{size: size, m: make(map[string]*cachedStmt, min(size, 64)), stats: stats}
}

func (c *stmtCache) get(query string) *cachedStmt {
	if cs, ok := c.m[query]; ok {
		c.touch(cs)
		return cs
	}
	c.stats.misses.Add(1)
	return nil
}

// touch counts a hit on a live entry and makes it the most recent.
func (c *stmtCache) touch(cs *cachedStmt) {
	c.stamp(cs)
	c.stats.hits.Add(1)
}

// stamp makes an entry the most recent; its hit is counted by the caller
// (touch, or the short path's tally).
func (c *stmtCache) stamp(cs *cachedStmt) {
	c.clock++
	cs.used = c.clock
}

// close closes an entry's statement; a caller that remembers the entry
// sees it is no longer live.
func (cs *cachedStmt) close() {
	cs.live = false
	_ = cs.stmt.Close()
}

// shrink closes the older half of the statements; false when empty.
func (c *stmtCache) shrink() bool {
	if len(c.m) == 0 {
		return false
	}
	byAge := slices.SortedFunc(maps.Values(c.m), func(a, b *cachedStmt) int { return cmp.Compare(a.used, b.used) })
	for _, cs := range byAge[:max(len(byAge)/2, 1)] {
		c.evict(cs)
	}
	return true
}

// evict removes and closes an entry, counted as an eviction.
func (c *stmtCache) evict(cs *cachedStmt) {
	delete(c.m, cs.query)
	cs.close()
	c.stats.evictions.Add(1)
}

// evictOldest evicts the least recently used entry.
func (c *stmtCache) evictOldest() {
	var old *cachedStmt
	for _, cs := range c.m {
		if old == nil || cs.used < old.used {
			old = cs
		}
	}
	if old != nil {
		c.evict(old)
	}
}

// put adds a statement, closing the least recently used one when full
// (COM_STMT_CLOSE: no round trip).
func (c *stmtCache) put(query string, st driver.Stmt) *cachedStmt {
	if len(c.m) >= c.size {
		c.evictOldest()
	}
	c.clock++
	cs := &cachedStmt{query: query, stmt: st, used: c.clock, live: true}
	var ok bool
	if cs.execer, ok = st.(driver.StmtExecContext); !ok {
		cs.execer = contextStmt{st}
	}
	if cs.queryer, ok = st.(driver.StmtQueryContext); !ok {
		cs.queryer = contextStmt{st}
	}
	c.m[query] = cs
	return cs
}

func (cs *cachedStmt) exec(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return cs.execer.ExecContext(ctx, args)
}

func (cs *cachedStmt) queryRows(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return cs.queryer.QueryContext(ctx, args)
}

// contextStmt adds the context methods to a statement of a driver that
// lacks them (one written before Go 1.8).
type contextStmt struct{ driver.Stmt }

func (s contextStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return stmtExec(ctx, s.Stmt, args)
}

func (s contextStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return stmtQuery(ctx, s.Stmt, args)
}

// drop removes and closes a statement that failed.
func (c *stmtCache) drop(query string) {
	if cs, ok := c.m[query]; ok {
		delete(c.m, query)
		cs.close()
	}
}

func (c *stmtCache) len() int { return len(c.m) }

func (c *stmtCache) closeAll() {
	for _, cs := range c.m {
		cs.close()
	}
	clear(c.m)
}
