package rwshard

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rwshard/rwshard/shard"
)

var (
	_ driver.Conn               = (*shardConn)(nil)
	_ driver.ConnPrepareContext = (*shardConn)(nil)
	_ driver.ConnBeginTx        = (*shardConn)(nil)
	_ driver.QueryerContext     = (*shardConn)(nil)
	_ driver.ExecerContext      = (*shardConn)(nil)
	_ driver.Pinger             = (*shardConn)(nil)
	_ driver.SessionResetter    = (*shardConn)(nil)
	_ driver.Validator          = (*shardConn)(nil)
	_ driver.NamedValueChecker  = (*shardConn)(nil)
	_ driver.Tx                 = (*shardTx)(nil)
)

// MaxShardConcurrency bounds how many units of one multi-shard read run at
// once.
const MaxShardConcurrency = 8

// shardConn is a logical connection of a sharded Connector. Each
// statement is routed by the rules to units (data source + rewritten SQL);
// each unit runs on that data source's cluster through an ordinary
// logical connection (conn), so read/write splitting, health and
// consistency apply inside every shard.
type shardConn struct {
	c     *Connector
	owner *Connector
	// subs hold one logical connection per data source this connection
	// used: single-unit statements run there (session state, held primary
	// connection, transactions).
	subs map[string]*conn

	// A transaction: sub-transactions open lazily, one per data source,
	// in order of first use; the rules state is held until it ends.
	inTx    bool
	txCtx   context.Context
	txOpts  driver.TxOptions
	txOrder []string
	txState *shardState
	xid     string // XA global transaction id, when Config.XA
}

func (sc *shardConn) sub(st *shardState, ds string) (*conn, error) {
	cl := st.clusters[ds]
	if cl == nil {
		return nil, &RouteError{Node: ds, Err: fmt.Errorf("%w: data source %s is not in the rules", ErrUnknownNode, ds)}
	}
	if c := sc.subs[ds]; c != nil && c.cl == cl {
		return c, nil
	}
	if old := sc.subs[ds]; old != nil { // the rules changed the data source
		old.release()
	}
	c := &conn{cl: cl, connector: sc.c}
	sc.subs[ds] = c
	return c, nil
}

// txSub returns the data source's connection inside the transaction,
// beginning its sub-transaction on first use.
func (sc *shardConn) txSub(st *shardState, ds string) (*conn, error) {
	c, err := sc.sub(st, ds)
	if err != nil || !sc.inTx || slices.Contains(sc.txOrder, ds) {
		return c, err
	}
	if sc.xid != "" {
		if _, err := c.exec(sc.txCtx, "XA START "+sc.xaID(ds), nil, false); err != nil {
			return nil, err
		}
	} else if _, err := c.BeginTx(sc.txCtx, sc.txOpts); err != nil {
		return nil, err
	}
	sc.txOrder = append(sc.txOrder, ds)
	return c, nil
}

// xaID is the XA id of one data source's branch: gtrid, bqual.
func (sc *shardConn) xaID(ds string) string {
	return "'" + sc.xid + "','" + ds + "'"
}

// state returns the rules state for a statement: the transaction's, or a
// freshly acquired one the caller releases.
func (sc *shardConn) state() (st *shardState, release func()) {
	if sc.inTx {
		return sc.txState, func() {}
	}
	st = sc.c.sh.acquire()
	return st, st.release
}

func (sc *shardConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return sc.query(ctx, q, args, false)
}

func (sc *shardConn) query(ctx context.Context, q string, args []driver.NamedValue, prepared bool) (driver.Rows, error) {
	st, release := sc.state()
	rt, err := st.router.Route(q, args)
	if err != nil {
		release()
		return nil, err
	}
	if len(rt.Units) == 1 {
		u := rt.Units[0]
		c, err := sc.txSub(st, u.DataSource)
		if err != nil {
			release()
			return nil, err
		}
		r, err := c.query(ctx, u.SQL, u.Args, prepared)
		if err != nil {
			release()
			return nil, unitErr(u, err)
		}
		return &releasingRows{Rows: r, release: release}, nil
	}
	if rt.Write || rt.Merge == nil {
		release()
		return nil, &RouteError{Reason: rt.Reason, Statement: quote(q),
			Err: fmt.Errorf("%w: a statement over %d shards that returns rows must be a read", shard.ErrUnsupported, len(rt.Units))}
	}
	var sources []shard.Source
	if sc.inTx {
		sources, err = sc.unitsInTx(ctx, st, rt.Units, prepared)
	} else {
		sources, err = sc.unitsParallel(ctx, st, rt.Units, prepared)
	}
	if err != nil {
		release()
		return nil, err
	}
	plan := rt.MergePlanFor(len(sources[0].Columns()))
	merged, err := shard.Merge(*plan, sources)
	if err != nil {
		release()
		return nil, err
	}
	return &releasingRows{Rows: merged, release: release}, nil
}

// unitErr names the shard a unit failed on; server errors stay reachable
// with errors.As.
func unitErr(u shard.Unit, err error) error {
	var re *RouteError
	if errors.As(err, &re) {
		return err
	}
	return &shardUnitError{DataSource: u.DataSource, SQL: quote(u.SQL), Err: err}
}

// shardUnitError names the shard where a unit of a statement failed.
type shardUnitError struct {
	DataSource string
	SQL        string
	Err        error
}

func (e *shardUnitError) Error() string {
	return fmt.Sprintf("rwshard: shard %s: %v (in %q)", e.DataSource, e.Err, e.SQL)
}
func (e *shardUnitError) Unwrap() error { return e.Err }

// unitsParallel runs the units of a read at once, each on its own logical
// connection, at most MaxShardConcurrency at a time. The first failure
// cancels the others and fails the read, naming the shard.
func (sc *shardConn) unitsParallel(ctx context.Context, st *shardState, units []shard.Unit, prepared bool) ([]shard.Source, error) {
	ctx, cancel := context.WithCancel(ctx)
	sources := make([]shard.Source, len(units))
	errs := make([]error, len(units))
	sem := make(chan struct{}, MaxShardConcurrency)
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			c := &conn{cl: st.clusters[u.DataSource], connector: sc.c}
			r, err := c.query(ctx, u.SQL, u.Args, prepared)
			if err != nil {
				c.release()
				errs[i] = unitErr(u, err)
				cancel()
				return
			}
			sources[i] = &unitRows{Rows: r, c: c}
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
		sources[i] = &cancelOnClose{Source: sources[i], group: group}
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

// unitsInTx runs the units of a read inside the transaction, one after
// another on each data source's transaction connection. A connection runs
// one result at a time, so every unit but the last is read into memory
// first (ShardingSphere's connection-strictly mode): memory grows with
// those results.
func (sc *shardConn) unitsInTx(ctx context.Context, st *shardState, units []shard.Unit, prepared bool) ([]shard.Source, error) {
	sources := make([]shard.Source, 0, len(units))
	fail := func(err error) ([]shard.Source, error) {
		for _, s := range sources {
			s.Close()
		}
		return nil, err
	}
	for i, u := range units {
		c, err := sc.txSub(st, u.DataSource)
		if err != nil {
			return fail(err)
		}
		r, err := c.query(ctx, u.SQL, u.Args, prepared)
		if err != nil {
			return fail(unitErr(u, err))
		}
		if i == len(units)-1 {
			sources = append(sources, r)
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

func (sc *shardConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return sc.exec(ctx, q, args, false)
}

// exec runs every unit of a write in turn. Outside a transaction each
// unit commits on its own: if one fails, the error names the shards that
// already applied theirs.
func (sc *shardConn) exec(ctx context.Context, q string, args []driver.NamedValue, prepared bool) (driver.Result, error) {
	st, release := sc.state()
	defer release()
	rt, err := st.router.Route(q, args)
	if err != nil {
		return nil, err
	}
	var res shardResult
	res.lastID = rt.LastInsertID
	var done []string
	for i, u := range rt.Units {
		c, err := sc.txSub(st, u.DataSource)
		if err != nil {
			return nil, partial(done, u, err)
		}
		r, err := c.exec(ctx, u.SQL, u.Args, prepared)
		if err != nil {
			return nil, partial(done, u, err)
		}
		n, _ := r.RowsAffected()
		res.affected += n
		if i == 0 && res.lastID == 0 {
			res.lastID, _ = r.LastInsertId()
		}
		done = append(done, u.DataSource)
	}
	return res, nil
}

// partial reports a unit that failed after others succeeded.
func partial(done []string, u shard.Unit, err error) error {
	if len(done) == 0 {
		return unitErr(u, err)
	}
	return &PartialWriteError{Applied: slices.Compact(done), Failed: u.DataSource, Err: err}
}

// PartialWriteError reports a write over several shards, outside a
// transaction, that some shards applied before one failed.
type PartialWriteError struct {
	Applied []string // data sources that applied their part
	Failed  string   // the data source that failed
	Err     error
}

func (e *PartialWriteError) Error() string {
	return fmt.Sprintf("rwshard: write failed on shard %s after %s applied their part (no transaction): %v",
		e.Failed, strings.Join(e.Applied, ", "), e.Err)
}
func (e *PartialWriteError) Unwrap() error { return e.Err }

type shardResult struct{ lastID, affected int64 }

func (r shardResult) LastInsertId() (int64, error) { return r.lastID, nil }
func (r shardResult) RowsAffected() (int64, error) { return r.affected, nil }

// BeginTx starts a transaction over the shards: one local transaction per
// data source, opened when a statement first touches it.
func (sc *shardConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if sc.inTx {
		return nil, &RouteError{Err: errors.New("a transaction is already open on this connection")}
	}
	sc.inTx, sc.txCtx, sc.txOpts, sc.txOrder = true, ctx, opts, nil
	sc.txState = sc.c.sh.acquire()
	if sc.c.sh.base.XA {
		var b [8]byte
		_, _ = rand.Read(b[:])
		sc.xid = "rwshard-" + hex.EncodeToString(b[:])
	}
	return (*shardTx)(sc), nil
}

func (sc *shardConn) Begin() (driver.Tx, error) {
	return sc.BeginTx(context.Background(), driver.TxOptions{})
}

// shardTx commits or rolls back the sub-transactions in the order they
// were opened.
type shardTx shardConn

// Commit commits each shard in turn. If one fails, the later ones are
// rolled back and the error names which shards committed and which did
// not: without XA a commit over shards is not atomic.
func (t *shardTx) Commit() error {
	sc := (*shardConn)(t)
	defer sc.endTx()
	if sc.xid != "" {
		return sc.xaCommit()
	}
	var committed []string
	for i, ds := range sc.txOrder {
		c := sc.subs[ds]
		if err := c.endTx(true); err != nil {
			rolledBack := sc.rollbackFrom(i + 1)
			if len(committed) == 0 {
				return &ShardCommitError{Failed: ds, RolledBack: rolledBack, Err: err}
			}
			return &ShardCommitError{Committed: committed, Failed: ds, RolledBack: rolledBack, Err: err}
		}
		committed = append(committed, ds)
	}
	return nil
}

func (t *shardTx) Rollback() error {
	sc := (*shardConn)(t)
	defer sc.endTx()
	if sc.xid != "" {
		return sc.xaRollback(sc.txOrder)
	}
	var first error
	for _, ds := range sc.txOrder {
		if err := sc.subs[ds].endTx(false); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rollbackFrom rolls back the sub-transactions from index i on.
func (sc *shardConn) rollbackFrom(i int) []string {
	var out []string
	for _, ds := range sc.txOrder[i:] {
		if sc.subs[ds].endTx(false) == nil {
			out = append(out, ds)
		}
	}
	return out
}

// xaCommit runs the two phases: XA END and XA PREPARE on every branch,
// then XA COMMIT on every branch. A failure in the first phase rolls every
// branch back; one in the second leaves the remaining branches prepared on
// their servers (XA RECOVER shows them) and the error says which.
func (sc *shardConn) xaCommit() error {
	ctx := sc.txCtx
	for _, ds := range sc.txOrder {
		c := sc.subs[ds]
		for _, q := range []string{"XA END ", "XA PREPARE "} {
			if _, err := c.exec(ctx, q+sc.xaID(ds), nil, false); err != nil {
				rolledBack := sc.xaRollback(sc.txOrder)
				return &ShardCommitError{Failed: ds, RolledBack: names(rolledBack, sc.txOrder), Err: err}
			}
		}
	}
	var committed []string
	for _, ds := range sc.txOrder {
		if _, err := sc.subs[ds].exec(ctx, "XA COMMIT "+sc.xaID(ds), nil, false); err != nil {
			return &ShardCommitError{Committed: committed, Failed: ds,
				Err: fmt.Errorf("%w (the branches after it stay prepared: XA RECOVER)", err)}
		}
		committed = append(committed, ds)
	}
	return nil
}

// xaRollback rolls back every branch (ending it first if still active)
// and returns the first error.
func (sc *shardConn) xaRollback(order []string) error {
	var first error
	for _, ds := range order {
		c := sc.subs[ds]
		_, _ = c.exec(sc.txCtx, "XA END "+sc.xaID(ds), nil, false) // an ended or prepared branch refuses: fine
		if _, err := c.exec(sc.txCtx, "XA ROLLBACK "+sc.xaID(ds), nil, false); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// names returns all when err is nil (every branch rolled back), else none.
func names(err error, all []string) []string {
	if err != nil {
		return nil
	}
	return all
}

func (sc *shardConn) endTx() {
	sc.inTx, sc.txCtx, sc.txOrder, sc.xid = false, nil, nil, ""
	if sc.txState != nil {
		sc.txState.release()
		sc.txState = nil
	}
}

// ShardCommitError reports a commit over shards that failed part way.
type ShardCommitError struct {
	Committed  []string // shards whose part is committed
	Failed     string   // the shard whose commit failed
	RolledBack []string // shards rolled back after the failure
	Err        error
}

func (e *ShardCommitError) Error() string {
	return fmt.Sprintf("rwshard: commit failed on shard %s; committed: [%s]; rolled back: [%s]: %v",
		e.Failed, strings.Join(e.Committed, ", "), strings.Join(e.RolledBack, ", "), e.Err)
}
func (e *ShardCommitError) Unwrap() error { return e.Err }

func (sc *shardConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return &shardStmt{sc: sc, q: q}, nil
}

func (sc *shardConn) Prepare(q string) (driver.Stmt, error) {
	return sc.PrepareContext(context.Background(), q)
}

// Ping pings the primary of every data source.
func (sc *shardConn) Ping(ctx context.Context) error {
	st, release := sc.state()
	defer release()
	for name := range st.clusters {
		c, err := sc.sub(st, name)
		if err != nil {
			return err
		}
		if err := c.Ping(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (sc *shardConn) CheckNamedValue(*driver.NamedValue) error { return nil }

func (sc *shardConn) ResetSession(ctx context.Context) error {
	for _, c := range sc.subs {
		if err := c.ResetSession(ctx); err != nil {
			return err
		}
	}
	return nil
}

// IsValid ends the session of every data source (see conn.IsValid).
func (sc *shardConn) IsValid() bool {
	ok := true
	for _, c := range sc.subs {
		ok = c.IsValid() && ok
	}
	return ok
}

func (sc *shardConn) Close() error {
	if sc.inTx {
		(*shardTx)(sc).Rollback()
	}
	for _, c := range sc.subs {
		c.Close()
	}
	if sc.owner != nil {
		return sc.owner.Close()
	}
	return nil
}

// shardStmt is a prepared statement of a sharded connection: routed on
// every execution.
type shardStmt struct {
	sc *shardConn
	q  string
}

func (s *shardStmt) Close() error  { return nil }
func (s *shardStmt) NumInput() int { return -1 }
func (s *shardStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.sc.exec(ctx, s.q, args, true)
}
func (s *shardStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.sc.query(ctx, s.q, args, true)
}
func (s *shardStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}
func (s *shardStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}
func (s *shardStmt) CheckNamedValue(*driver.NamedValue) error { return nil }

// releasingRows releases the rules state when the rows are closed.
type releasingRows struct {
	driver.Rows
	release func()
	once    sync.Once
}

func (r *releasingRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.release)
	return err
}

func (r *releasingRows) ColumnTypeDatabaseTypeName(i int) string {
	if m, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return m.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// unitRows are one unit's rows on a temporary logical connection, which
// ends with them.
type unitRows struct {
	driver.Rows
	c *conn
}

func (u *unitRows) Close() error {
	err := u.Rows.Close()
	u.c.release()
	return err
}

func (u *unitRows) ColumnTypeDatabaseTypeName(i int) string {
	if m, ok := u.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return m.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// cancelGroup cancels a multi-shard read's context when the last of its
// sources is closed.
type cancelGroup struct {
	open   atomic.Int32
	cancel context.CancelFunc
}

// cancelOnClose is one source of a cancelGroup.
type cancelOnClose struct {
	shard.Source
	group  *cancelGroup
	closed bool
}

func (c *cancelOnClose) Close() error {
	err := c.Source.Close()
	if !c.closed {
		c.closed = true
		if c.group.open.Add(-1) == 0 {
			c.group.cancel()
		}
	}
	return err
}

func (c *cancelOnClose) ColumnTypeDatabaseTypeName(i int) string {
	if m, ok := c.Source.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return m.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// bufferedRows is a unit's result read into memory.
type bufferedRows struct {
	cols  []string
	types []string
	rows  [][]driver.Value
}

func buffer(r driver.Rows) (*bufferedRows, error) {
	defer r.Close()
	b := &bufferedRows{cols: r.Columns()}
	if m, ok := r.(driver.RowsColumnTypeDatabaseTypeName); ok {
		for i := range b.cols {
			b.types = append(b.types, m.ColumnTypeDatabaseTypeName(i))
		}
	}
	for {
		row := make([]driver.Value, len(b.cols))
		err := r.Next(row)
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		for i, v := range row {
			if bs, ok := v.([]byte); ok {
				row[i] = slices.Clone(bs) // the driver reuses its buffer
			}
		}
		b.rows = append(b.rows, row)
	}
}

func (b *bufferedRows) Columns() []string { return b.cols }
func (b *bufferedRows) Close() error      { b.rows = nil; return nil }
func (b *bufferedRows) Next(dest []driver.Value) error {
	if len(b.rows) == 0 {
		return io.EOF
	}
	copy(dest, b.rows[0])
	b.rows = b.rows[1:]
	return nil
}
func (b *bufferedRows) ColumnTypeDatabaseTypeName(i int) string {
	if i < len(b.types) {
		return b.types[i]
	}
	return ""
}
