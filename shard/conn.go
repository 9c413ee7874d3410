package shard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/go-sql-driver/mysql"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/redact"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/internal/rowsx"
	"github.com/rwshard/rwshard/internal/shardhook"
)

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

// conn is a sharded logical connection. Every statement is classified by
// the driver's classifier first: statements that change the session
// (text transactions, SET autocommit, SET) are the logical connection's
// own and apply to every data source it uses; the others are routed by
// the rules to units (data source + rewritten SQL), and each unit runs on
// that data source's ordinary rwshard connection (sub), so read/write
// splitting, health, consistency and hints apply inside every shard.
type conn struct {
	c         *connector
	closeWith io.Closer // set by Driver.Open: closed with the connection

	// subs hold one logical connection per data source this connection
	// used: single-unit statements, transactions and the session run
	// there.
	subs map[string]*sub
	// session lists the SET statements run on this connection, in order:
	// every sub has applied them (a new one first replays them).
	session []string

	// A transaction: sub-transactions open lazily, one per data source, in
	// order of first use (txOrder); the rules state is held until it ends.
	tx            txMode
	autocommitOff bool // SET autocommit=0 in force: every data source runs in a transaction
	txCtx         context.Context
	txOpts        driver.TxOptions
	txBegin       string // the text BEGIN / START TRANSACTION statement
	txOrder       []string
	txState       *state
	xid           string // XA global transaction id, when Config.Sharding.XA
}

type txMode uint8

const (
	txNone txMode = iota
	txAPI         // BeginTx
	txText        // BEGIN or START TRANSACTION sent as a statement
)

// sub is the connection of one data source.
type sub struct {
	dc      *rwshard.Connector
	conn    driver.Conn
	tx      driver.Tx // BeginTx sub-transaction
	applied int       // how many of the session statements it ran
}

// inTx reports an open transaction of any kind.
func (sc *conn) inTx() bool { return sc.tx != txNone || sc.autocommitOff }

// CloseWith makes Close close cl too (Driver.Open's own connector).
func (sc *conn) CloseWith(cl io.Closer) { sc.closeWith = cl }

// state returns the rules state for a statement: the transaction's, or a
// freshly acquired one the caller releases.
func (sc *conn) state() (st *state, release func()) {
	if sc.txState != nil {
		return sc.txState, func() {}
	}
	st = sc.c.acquire()
	return st, st.release
}

// sub returns the connection of data source ds, opening it (and replaying
// the session on it) on first use, and beginning its part of an open
// transaction.
func (sc *conn) sub(ctx context.Context, st *state, ds string) (*sub, error) {
	dc := st.sources[ds]
	if dc == nil {
		return nil, &rwshard.RouteError{Node: ds, Err: fmt.Errorf("%w: data source %s is not in the rules", rwshard.ErrUnknownNode, ds)}
	}
	s := sc.subs[ds]
	if s != nil && s.dc != dc { // a reload changed the data source
		s.conn.Close()
		s = nil
	}
	if s == nil {
		dconn, err := dc.Connect(ctx)
		if err != nil {
			return nil, err
		}
		s = &sub{dc: dc, conn: dconn}
		sc.subs[ds] = s
	}
	for s.applied < len(sc.session) {
		if _, err := s.exec(ctx, sc.session[s.applied], nil, false); err != nil {
			return nil, err
		}
		s.applied++
	}
	if sc.inTx() && !slices.Contains(sc.txOrder, ds) {
		if err := sc.beginOn(s, ds); err != nil {
			return nil, err
		}
		sc.txOrder = append(sc.txOrder, ds)
	}
	return s, nil
}

// beginOn begins the transaction's part on one data source.
func (sc *conn) beginOn(s *sub, ds string) error {
	var err error
	switch {
	case sc.tx == txNone: // autocommit=0: the replayed SET started it
	case sc.xid != "":
		_, err = s.exec(sc.txCtx, "XA START "+sc.xaID(ds), nil, false)
	case sc.tx == txText:
		_, err = s.exec(sc.txCtx, sc.txBegin, nil, false)
	default:
		s.tx, err = s.conn.(driver.ConnBeginTx).BeginTx(sc.txCtx, sc.txOpts)
	}
	return err
}

func (s *sub) exec(ctx context.Context, q string, args []driver.NamedValue, prepared bool) (driver.Result, error) {
	if !prepared {
		return s.conn.(driver.ExecerContext).ExecContext(ctx, q, args)
	}
	st, err := s.conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *sub) query(ctx context.Context, q string, args []driver.NamedValue, prepared bool) (driver.Rows, error) {
	if !prepared {
		return s.conn.(driver.QueryerContext).QueryContext(ctx, q, args)
	}
	st, err := s.conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer st.Close() // rwshard's statements hold nothing of their own
	return st.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// execUnit and queryUnit run unit u of a logical statement of class cls
// on the data source's connection through the driver's own statement
// path (shardhook.Units): no second classification, and a prepared unit
// is prepared where its plan runs it (a replica's connection for a read),
// not first on the data source's primary.
func (s *sub) execUnit(ctx context.Context, u Unit, cls *route.Class, prepared bool) (driver.Result, error) {
	if uc, ok := s.conn.(shardhook.Units); ok {
		return uc.ExecUnit(ctx, u.SQL, u.Args, *cls, prepared)
	}
	return s.exec(ctx, u.SQL, u.Args, prepared)
}

func (s *sub) queryUnit(ctx context.Context, u Unit, cls *route.Class, prepared bool) (driver.Rows, error) {
	if uc, ok := s.conn.(shardhook.Units); ok {
		return uc.QueryUnit(ctx, u.SQL, u.Args, *cls, prepared)
	}
	return s.query(ctx, u.SQL, u.Args, prepared)
}

// classify is the driver's classification of a logical statement, and
// the context its units run with: the statement's comment hints merged
// into the context's, so that they mean on every shard what they mean
// without sharding.
func (sc *conn) classify(ctx context.Context, q string) (context.Context, route.Class, error) {
	cls, err := sc.c.classifier.Classify(q)
	if err != nil { // a *hint.Error naming the comment: not sent
		return ctx, cls, &rwshard.RouteError{Reason: "hint", Statement: redact.Quote(q), Err: err}
	}
	h := cls.Hint
	if ch, ok := hint.FromContext(ctx); ok {
		h = hint.Merge(ch, cls.Hint)
	}
	if !h.IsZero() {
		ctx = hint.NewContext(ctx, h)
	}
	return ctx, cls, nil
}

func (sc *conn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return sc.query(ctx, q, args, false)
}

func (sc *conn) query(ctx context.Context, q string, args []driver.NamedValue, prepared bool) (driver.Rows, error) {
	ctx, cls, err := sc.classify(ctx, q)
	if err != nil {
		return nil, err
	}
	if handled, err := sc.sessionStatement(ctx, q, cls, args); handled {
		if err != nil {
			return nil, err
		}
		return noRows{}, nil
	}
	st, release := sc.state()
	rt, err := st.router.RouteContext(ctx, q, args, sc.columnSource(st))
	if err != nil {
		release()
		return nil, err
	}
	if len(rt.Units) == 1 {
		u := rt.Units[0]
		s, err := sc.sub(ctx, st, u.DataSource)
		if err != nil {
			release()
			return nil, unitErr(u, err)
		}
		r, err := s.queryUnit(ctx, u, &cls, prepared)
		if rt.Reason == ReasonAllShards && rt.Write {
			// DDL through Query: the columns may have changed, as in exec.
			st.columns.forget(rt.Tables)
		}
		if err != nil {
			release()
			return nil, unitErr(u, err)
		}
		return &releasingRows{Rows: rowsx.Rows{Rows: r}, release: release}, nil
	}
	if rt.Write || rt.merge == nil {
		release()
		return nil, &RouteError{SQL: q,
			Err: fmt.Errorf("%w: a statement over %d shards that returns rows must be a read", ErrUnsupported, len(rt.Units))}
	}
	var sources []rowSource
	if sc.inTx() || len(sc.session) > 0 {
		sources, err = sc.unitsOnSubs(ctx, st, rt.Units, &cls, prepared)
	} else {
		sources, err = sc.unitsParallel(ctx, st, rt.Units, &cls, prepared)
	}
	if err != nil {
		release()
		return nil, err
	}
	meta := rowsx.Describe(sources[0])
	plan := rt.mergePlanFor(len(meta))
	merged, err := merge(*plan, sources)
	if err != nil {
		release()
		return nil, err
	}
	return &releasingRows{Rows: rowsx.Rows{Rows: merged, Meta: mergedMeta(meta, merged)}, release: release}, nil
}

// mergedMeta is the metadata of the columns a merge returns: the shards'
// (copied from the first, as the merge may close it before the caller
// asks), for the visible columns only (the others are helper columns the
// rewrite added), with the merge's own type names (an aggregate keeps the
// type the shards gave it).
func mergedMeta(meta rowsx.Columns, merged rowSource) rowsx.Columns {
	n := min(len(merged.Columns()), len(meta))
	out := slices.Clone(meta[:n])
	if m, ok := merged.(driver.RowsColumnTypeDatabaseTypeName); ok {
		for i := range out {
			if t := m.ColumnTypeDatabaseTypeName(i); t != "" {
				out[i].DatabaseTypeName = t
			}
		}
	}
	return out
}

// unitErr passes errors on as they came: server errors stay
// *mysql.MySQLError (GORM and others type-assert them), rwshard's own are
// typed already. Anything else is wrapped in a *UnitError naming the
// shard.
func unitErr(u Unit, err error) error {
	var me *mysql.MySQLError
	var re *rwshard.RouteError
	var ce *rwshard.ConfigError
	if errors.As(err, &me) || errors.As(err, &re) || errors.As(err, &ce) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &UnitError{DataSource: u.DataSource, SQL: u.SQL, Err: err}
}

// UnitError names the shard where a unit of a statement failed with an
// error that is neither the server's (those reach the caller as
// *mysql.MySQLError) nor rwshard's own.
type UnitError struct {
	DataSource string
	SQL        string // the unit's SQL
	Err        error
}

func (e *UnitError) Error() string {
	return fmt.Sprintf("rwshard: shard %s: %v (in %s)", e.DataSource, e.Err, quoteStatement(e.SQL))
}
func (e *UnitError) Unwrap() error { return e.Err }

// unitsParallel runs the units of a read at once, each on a logical
// connection of its own, at most Config.Sharding.Concurrency at a time. The
// first failure cancels the others and fails the read.
func (sc *conn) unitsParallel(ctx context.Context, st *state, units []Unit, cls *route.Class, prepared bool) ([]rowSource, error) {
	ctx, cancel := context.WithCancel(ctx)
	sources := make([]rowSource, len(units))
	errs := make([]error, len(units))
	sem := make(chan struct{}, sc.c.base.Sharding.Concurrency)
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			dconn, err := st.sources[u.DataSource].Connect(ctx)
			if err != nil {
				errs[i] = unitErr(u, err)
				cancel()
				return
			}
			s := &sub{conn: dconn}
			r, err := s.queryUnit(ctx, u, cls, prepared)
			if err != nil {
				dconn.Close()
				errs[i] = unitErr(u, err)
				cancel()
				return
			}
			sources[i] = &unitRows{Rows: rowsx.Rows{Rows: r}, conn: dconn}
		})
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		cancel()
		for _, s := range sources {
			if s != nil {
				s.Close()
			}
		}
		return nil, err
	}
	// The context must live as long as the rows: it is cancelled when the
	// last source is closed (the merge closes each as it runs out).
	group := &cancelGroup{cancel: cancel}
	group.open.Store(int32(len(sources)))
	for i := range sources {
		sources[i] = &cancelOnClose{Rows: rowsx.Rows{Rows: sources[i]}, group: group}
	}
	return sources, nil
}

// firstErr returns the first error that is not a cancellation caused by
// another unit's failure.
func firstErr(errs []error) error {
	var cancelled error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) {
			cancelled = err
			continue
		}
		return err
	}
	return cancelled
}

// unitsOnSubs runs the units of a read one after another on each data
// source's own connection: inside a transaction, or in a session whose
// SET statements those connections carry. A connection runs one result
// at a time, so every unit but the last is read into memory first
// (ShardingSphere's connection-strictly mode): memory grows with those
// results.
func (sc *conn) unitsOnSubs(ctx context.Context, st *state, units []Unit, cls *route.Class, prepared bool) ([]rowSource, error) {
	sources := make([]rowSource, 0, len(units))
	fail := func(err error) ([]rowSource, error) {
		for _, s := range sources {
			s.Close()
		}
		return nil, err
	}
	for i, u := range units {
		s, err := sc.sub(ctx, st, u.DataSource)
		if err != nil {
			return fail(unitErr(u, err))
		}
		r, err := s.queryUnit(ctx, u, cls, prepared)
		if err != nil {
			return fail(unitErr(u, err))
		}
		if i == len(units)-1 {
			sources = append(sources, &unitRows{Rows: rowsx.Rows{Rows: r}})
			break
		}
		b, err := buffer(r)
		if err != nil {
			return fail(unitErr(u, err))
		}
		sources = append(sources, b)
	}
	return sources, nil
}

func (sc *conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return sc.exec(ctx, q, args, false)
}

// exec runs every unit of a write in turn. Outside a transaction each
// unit commits on its own: if one fails, the error names the shards that
// already applied theirs; the units of an Atomic route run in a
// transaction of their own instead (execAtomic).
func (sc *conn) exec(ctx context.Context, q string, args []driver.NamedValue, prepared bool) (driver.Result, error) {
	ctx, cls, err := sc.classify(ctx, q)
	if err != nil {
		return nil, err
	}
	if handled, err := sc.sessionStatement(ctx, q, cls, args); handled {
		if err != nil {
			return nil, err
		}
		return driver.ResultNoRows, nil
	}
	st, release := sc.state()
	defer release()
	rt, err := st.router.RouteContext(ctx, q, args, sc.columnSource(st))
	if err != nil {
		return nil, err
	}
	if rt.Reason == ReasonAllShards && rt.Write {
		// DDL (or a write to every node): the columns may have changed,
		// also if it fails half-way.
		defer st.columns.forget(rt.Tables)
	}
	if rt.Atomic && !sc.inTx() {
		return sc.execAtomic(ctx, st, rt, &cls, prepared)
	}
	res, failed, err := sc.execUnits(ctx, st, rt, &cls, prepared)
	if err != nil {
		return nil, partial(rt.Units[:failed], rt.Units[failed], err)
	}
	return res, nil
}

// execUnits runs the units of a write in turn, summing their rows
// affected. On an error it returns the index of the unit that failed.
func (sc *conn) execUnits(ctx context.Context, st *state, rt *Route, cls *route.Class, prepared bool) (result, int, error) {
	res := result{lastID: rt.LastInsertID}
	for i, u := range rt.Units {
		s, err := sc.sub(ctx, st, u.DataSource)
		if err != nil {
			return res, i, err
		}
		r, err := s.execUnit(ctx, u, cls, prepared)
		if err != nil {
			return res, i, err
		}
		n, _ := r.RowsAffected()
		res.affected += n
		if i == 0 && res.lastID == 0 {
			res.lastID, _ = r.LastInsertId()
		}
	}
	return res, 0, nil
}

// partial reports a unit that failed after the units done succeeded.
func partial(done []Unit, u Unit, err error) error {
	if len(done) == 0 {
		return unitErr(u, err)
	}
	applied := make([]string, len(done))
	for i, d := range done {
		applied[i] = d.DataSource
	}
	return &PartialWriteError{Applied: slices.Compact(applied), Failed: u.DataSource, Err: err}
}

// PartialWriteError reports a write over several shards, outside a
// transaction, that some shards applied before one failed.
type PartialWriteError struct {
	Applied []string // data sources that applied their part
	Failed  string   // the data source that failed
	Err     error
}

func (e *PartialWriteError) Error() string {
	return fmt.Sprintf("rwshard: shard: write failed on shard %s after %s applied their part (no transaction): %v",
		e.Failed, strings.Join(e.Applied, ", "), e.Err)
}
func (e *PartialWriteError) Unwrap() error { return e.Err }

type result struct{ lastID, affected int64 }

func (r result) LastInsertId() (int64, error) { return r.lastID, nil }
func (r result) RowsAffected() (int64, error) { return r.affected, nil }

// sessionStatement runs a statement that changes the logical
// connection's session: text transaction control, SET autocommit, SET.
// handled is false for every other statement. Session state that lives
// on one server connection and cannot be carried to every data source
// (temporary tables, locks, USE, SQL-level PREPARE, CALL, user-variable
// assignment in a query) is refused with a *RouteError naming the
// statement, never applied to one shard.
func (sc *conn) sessionStatement(ctx context.Context, q string, cls route.Class, args []driver.NamedValue) (bool, error) {
	e := cls.Effect
	if e == 0 {
		return false, nil
	}
	if cls.Statements > 1 {
		return true, refuse(q, "a multi-statement string that changes the session")
	}
	if len(args) > 0 {
		return true, refuse(q, "arguments to a statement that changes the session")
	}
	word := leadingWord(q)
	switch {
	case word == "xa":
		return true, refuse(q, "XA statements (use rwshard.xa=true for XA across shards)")
	case e.Has(route.TxBegin):
		return true, sc.beginText(ctx, q)
	case e.Has(route.TxEnd):
		return true, sc.endText(ctx, q, word == "commit")
	case e.Has(route.AutocommitOff), e.Has(route.AutocommitOn):
		return true, sc.setAutocommit(ctx, q, e.Has(route.AutocommitOn))
	case word == "set":
		return true, sc.set(ctx, q)
	}
	return true, refuse(q, "session state on one server connection (temporary table, lock, USE, PREPARE, CALL, user variable); a sharded connection spans several")
}

// refuse is the error of a session statement a sharded connection cannot
// carry.
func refuse(q, what string) error {
	return &RouteError{SQL: q, Err: unsupported("%s", what)}
}

// leadingWord is the statement's first word, lower case, after comments.
func leadingWord(q string) string {
	s := strings.TrimLeftFunc(sqlparser.StripLeadingComments(q), func(r rune) bool { return !unicode.IsLetter(r) })
	if end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }); end >= 0 {
		s = s[:end]
	}
	return strings.ToLower(s)
}

// set runs a SET statement on every data source this connection uses
// (the default one, or the first, when it used none yet, so that the
// server's verdict comes at once) and records it for the data sources it
// uses later.
func (sc *conn) set(ctx context.Context, q string) error {
	st, release := sc.state()
	defer release()
	if len(sc.subs) == 0 {
		ds := st.rules.DefaultDataSource
		if ds == "" {
			ds = sortedNames(st.sources)[0]
		}
		if _, err := sc.sub(ctx, st, ds); err != nil {
			return err
		}
	}
	for _, ds := range sortedNames(sc.subs) {
		s := sc.subs[ds]
		if _, err := s.exec(ctx, q, nil, false); err != nil {
			return err
		}
		s.applied++
	}
	sc.session = append(sc.session, q)
	return nil
}

// setAutocommit runs SET autocommit=… on every data source (see set).
// autocommit=0 makes every statement part of a transaction across the
// data sources it touches, until COMMIT or ROLLBACK; autocommit=1 commits
// that transaction on each server, as it does on one.
func (sc *conn) setAutocommit(ctx context.Context, q string, on bool) error {
	if sc.tx == txAPI {
		return refuse(q, "SET autocommit inside a transaction from BeginTx")
	}
	if err := sc.set(ctx, q); err != nil {
		return err
	}
	switch {
	case on && sc.autocommitOff:
		sc.autocommitOff = false
		if sc.tx == txNone {
			sc.endTx()
		}
	case !on && !sc.autocommitOff:
		sc.autocommitOff = true
		sc.holdState(ctx)
		for _, ds := range sortedNames(sc.subs) { // the SET opened a transaction on each
			sc.txOrder = append(sc.txOrder, ds)
		}
	}
	return nil
}

// holdState keeps the rules state for a transaction.
func (sc *conn) holdState(ctx context.Context) {
	if sc.txState == nil {
		sc.txState = sc.c.acquire()
	}
	sc.txCtx = context.WithoutCancel(ctx)
}

// beginText starts a transaction sent as a statement (BEGIN, START
// TRANSACTION …): each data source runs the same statement when the
// transaction first touches it. As on one server, a BEGIN inside a
// transaction commits that one first.
func (sc *conn) beginText(ctx context.Context, q string) error {
	switch sc.tx {
	case txAPI:
		return refuse(q, "BEGIN inside a transaction from BeginTx")
	case txText:
		if err := sc.endText(ctx, "COMMIT", true); err != nil {
			return err
		}
	}
	if sc.autocommitOff && len(sc.txOrder) > 0 { // BEGIN commits the implicit transaction
		if err := sc.finish(ctx, "COMMIT", true); err != nil {
			return err
		}
	}
	sc.tx, sc.txBegin = txText, q
	sc.holdState(ctx)
	if sc.c.base.Sharding.XA {
		sc.xid = newXID()
	}
	return nil
}

// endText ends the transaction with a COMMIT or ROLLBACK statement; with
// none open it does nothing, as a server does.
func (sc *conn) endText(ctx context.Context, q string, commit bool) error {
	switch {
	case sc.tx == txAPI:
		return refuse(q, "COMMIT or ROLLBACK as a statement inside a transaction from BeginTx; use Tx.Commit or Tx.Rollback")
	case sc.tx == txNone && !sc.autocommitOff:
		return nil
	}
	err := sc.finish(ctx, q, commit)
	if sc.autocommitOff {
		// The next statement on each data source opens a new transaction
		// there: they are all part of it again.
		sc.tx, sc.txBegin, sc.xid = txNone, "", ""
		sc.txOrder = sortedNames(sc.subs)
		return err
	}
	sc.endTx()
	return err
}

func (sc *conn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if _, _, err := sc.classify(ctx, q); err != nil {
		return nil, err
	}
	st, release := sc.state()
	defer release()
	if p := st.router.plan(q); p.err != nil && errors.Is(p.err, ErrUnsupported) {
		return nil, p.err
	}
	return &stmt{sc: sc, q: q}, nil
}

func (sc *conn) Prepare(q string) (driver.Stmt, error) {
	return sc.PrepareContext(context.Background(), q)
}

// Ping pings the primary of every data source.
func (sc *conn) Ping(ctx context.Context) error {
	st, release := sc.state()
	defer release()
	for _, name := range sortedNames(st.sources) {
		s, err := sc.sub(ctx, st, name)
		if err != nil {
			return err
		}
		if err := s.conn.(driver.Pinger).Ping(ctx); err != nil {
			return err
		}
	}
	return nil
}

// CheckNamedValue accepts every argument unchanged: the connection of
// each data source converts it as go-sql-driver does.
func (sc *conn) CheckNamedValue(*driver.NamedValue) error { return nil }

// ResetSession is called by database/sql before reusing the connection.
// As on one go-sql-driver connection, the session carries over to the
// next user: its SET statements, an open text transaction, each data
// source's held connection.
func (sc *conn) ResetSession(ctx context.Context) error {
	if sc.c.base.ResetSession && (sc.inTx() || len(sc.session) > 0) {
		// rwshard.resetSession: the next user starts without the state
		// (each data source's connection drops its own).
		_ = sc.finish(ctx, "ROLLBACK", false)
		sc.autocommitOff = false
		sc.endTx()
		sc.session = nil
		for _, s := range sc.subs {
			s.applied = 0
		}
	}
	for _, s := range sc.subs {
		if err := s.conn.(driver.SessionResetter).ResetSession(ctx); err != nil {
			return err
		}
	}
	return nil
}

// IsValid reports whether every data source's connection may be pooled
// again. It changes nothing.
func (sc *conn) IsValid() bool {
	for _, s := range sc.subs {
		if !s.conn.(driver.Validator).IsValid() {
			return false
		}
	}
	return true
}

func (sc *conn) Close() error {
	if sc.inTx() {
		_ = sc.finish(context.Background(), "ROLLBACK", false)
		sc.autocommitOff = false
		sc.endTx()
	}
	var errs []error
	for _, s := range sc.subs {
		errs = append(errs, s.conn.Close())
	}
	if sc.closeWith != nil {
		errs = append(errs, sc.closeWith.Close())
	}
	return errors.Join(errs...)
}

// stmt is a prepared statement of a sharded connection: routed on every
// execution.
type stmt struct {
	sc *conn
	q  string
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return -1 }
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.sc.exec(ctx, s.q, args, true)
}
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.sc.query(ctx, s.q, args, true)
}
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}
func (s *stmt) CheckNamedValue(*driver.NamedValue) error { return nil }

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
