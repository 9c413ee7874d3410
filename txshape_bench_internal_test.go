package rwshard

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/hint"
)

// BenchmarkTxShapeOverhead is what rwshard adds, in client CPU and
// allocations, to a TPC-C-shaped transaction, without a server: go-tpc's
// way of driving database/sql (a *sql.Conn per worker, statements
// prepared once on it, per transaction a Ping, BeginTx, the prepared
// statements with their arguments, Commit), direct over a driver that
// answers at once, and through rwshard's own per-node pools (a DSN-opened
// connector whose nodes' connections are the same instant driver). The
// statements are go-tpc's NEW_ORDER shapes: point reads and updates, and
// multi-row reads and inserts with up to 135 placeholders.
func BenchmarkTxShapeOverhead(b *testing.B) {
	for _, s := range txShapeSides(b) {
		b.Run("side="+s.name, func(b *testing.B) { benchTxShape(b, s.db) })
		// From 8 goroutines, each on its own *sql.Conn, as go-tpc's
		// threads: what shared state (counters, locks) costs when cores
		// contend for it.
		b.Run("parallel/side="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) { txShapeLoop(b, s.db, pb.Next) })
		})
	}
}

// BenchmarkTxShapeRequestContext is BenchmarkTxShapeOverhead's
// transaction in a request's context, as a web service runs it: six
// values put in by middleware (request ID, logger, span, user, …), in a
// program that uses hints elsewhere (one was made: hint.Made). Every
// statement of a transaction looks for a hint in its context; the short
// path looks once per context (conn.plainCtx).
func BenchmarkTxShapeRequestContext(b *testing.B) {
	_ = hint.Primary(context.Background()) // hints in use elsewhere in the program
	ctx := context.Background()
	for i := range 6 {
		ctx = context.WithValue(ctx, requestKey(i), i)
	}
	for _, s := range txShapeSides(b) {
		b.Run("side="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			txShapeLoopCtx(b, ctx, s.db, b.Loop)
		})
	}
}

// txShapeSide is one side of the TxShape benchmarks.
type txShapeSide struct {
	name string
	db   *sql.DB
}

// txShapeSides are direct over a driver that answers at once, and rwshard
// over the same driver (openInstant), closed at the benchmark's end.
func txShapeSides(b *testing.B) []txShapeSide {
	direct := sql.OpenDB(&instantBackend{mysqlShaped: true})
	b.Cleanup(func() { direct.Close() })
	return []txShapeSide{{"direct", direct}, {"rwshard", openInstant(b, &instantBackend{mysqlShaped: true}, 0)}}
}

// requestKey is a middleware's context key.
type requestKey int

// openInstant opens rwshard over a primary and two replicas whose
// connections are be's, through the DSN path (rwshard's own per-node
// pools and statement caches), health off; maxOpen bounds each node's
// pool (rwshard.maxOpenConns; 0: no bound).
func openInstant(tb testing.TB, be *instantBackend, maxOpen int) *sql.DB {
	db := sql.OpenDB(instantConnector(tb, be, maxOpen, ""))
	tb.Cleanup(func() { db.Close() })
	return db
}

// instantConnector is openInstant's connector, with more DSN parameters
// (params: "&rwshard.…=…").
func instantConnector(tb testing.TB, be driver.Connector, maxOpen int, params string) *Connector {
	cfg, err := ParseDSN("app:pw@tcp(127.0.0.1:1),tcp(127.0.0.1:2),tcp(127.0.0.1:3)/app?rwshard.health=false" + params)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for _, n := range c.cl.nodes {
		n.conns.close()
		n.conns = newConnPool(&nodeConnector{inner: be, cacheSize: c.cfg.StmtCacheSize, stats: &n.stmts}, maxOpen, 16, 0, 0)
		n.maxOpen, n.limited = maxOpen, maxOpen > 0
	}
	return c
}

// txShapeStatements are go-tpc NEW_ORDER's statements, with their
// argument counts: 7 point statements, and a 15-item order's item and
// stock reads (15 and 30 placeholders) and order-line insert (135).
func txShapeStatements() (qs []string, nargs []int) {
	add := func(q string, n int) { qs, nargs = append(qs, q), append(nargs, n) }
	add("SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?", 3)
	add("SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE", 2)
	add("UPDATE district SET d_next_o_id = ? + 1 WHERE d_id = ? AND d_w_id = ?", 3)
	add("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, ?, ?, ?)", 7)
	add("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)", 3)
	add("SELECT i_price, i_name, i_data, i_id FROM item WHERE i_id IN (?"+strings.Repeat(",?", 14)+")", 15)
	add("SELECT s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE (s_w_id, s_i_id) IN ((?,?)"+strings.Repeat(",(?,?)", 14)+") FOR UPDATE", 30)
	add("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?", 5)
	line := "(?,?,?,?,?,?,?,?,?,NULL)"
	add("INSERT into order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info, ol_delivery_d) VALUES "+
		line+strings.Repeat(","+line, 14), 135)
	return qs, nargs
}

func benchTxShape(b *testing.B, db *sql.DB) {
	b.ReportAllocs()
	txShapeLoop(b, db, b.Loop)
}

// txShapeLoop runs TPC-C-shaped transactions on a *sql.Conn of db while
// next says so.
func txShapeLoop(b *testing.B, db *sql.DB, next func() bool) {
	txShapeLoopCtx(b, context.Background(), db, next)
}

// txShapeLoopCtx is txShapeLoop with the statements' context.
func txShapeLoopCtx(b *testing.B, ctx context.Context, db *sql.DB, next func() bool) {
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	qs, nargs := txShapeStatements()
	stmts := make([]*sql.Stmt, len(qs))
	args := make([][]any, len(qs))
	for i, q := range qs {
		if stmts[i], err = conn.PrepareContext(ctx, q); err != nil {
			b.Fatal(err)
		}
		defer stmts[i].Close()
		for j := range nargs[i] {
			if j%3 == 2 {
				args[i] = append(args[i], fmt.Sprintf("dist-info-%02d", j))
			} else {
				args[i] = append(args[i], j+1)
			}
		}
	}
	for next() {
		if err := conn.PingContext(ctx); err != nil {
			b.Fatal(err)
		}
		tx, err := conn.BeginTx(ctx, &sql.TxOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for i, st := range stmts {
			if strings.HasPrefix(qs[i], "SELECT") {
				rows, err := st.QueryContext(ctx, args[i]...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				if err := rows.Close(); err != nil {
					b.Fatal(err)
				}
			} else if _, err := st.ExecContext(ctx, args[i]...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// evictCaches runs at every statement the instant driver answers:
// nothing, but in the cold model of scripts/txshape-cachegrind (build tag
// txshapecold), where it evicts the caches as the servers do that run
// between a client's statements on the cores they share.
var evictCaches = func() {}

// instantBackend is a driver whose connections answer at once: every
// query one row of four columns, every exec one affected row. It has the
// interfaces go-sql-driver's connections have that matter here.
type instantBackend struct {
	checks atomic.Int64 // arguments converted (CheckNamedValue calls)
	// mysqlShaped: its Driver is go-sql-driver's type, so rwshard converts
	// the plain types over it itself, as over go-sql-driver
	// (backendConn.mysql), without the connections' CheckNamedValue. That
	// runs database/sql's default converter, which takes the steps
	// go-sql-driver's takes for a Go int or string (not a driver.Value,
	// no driver.Valuer, then reflection by kind): direct's side runs it,
	// as it would go-sql-driver's.
	mysqlShaped bool
}

func (be *instantBackend) Connect(context.Context) (driver.Conn, error) {
	return &instantBackendConn{be: be}, nil
}
func (be *instantBackend) Driver() driver.Driver {
	if be.mysqlShaped {
		return &mysql.MySQLDriver{}
	}
	return nil
}

type instantBackendConn struct{ be *instantBackend }

func (*instantBackendConn) Prepare(q string) (driver.Stmt, error) {
	return &instantBackendStmt{}, nil
}
func (*instantBackendConn) PrepareContext(_ context.Context, q string) (driver.Stmt, error) {
	return &instantBackendStmt{}, nil
}
func (*instantBackendConn) Close() error              { return nil }
func (*instantBackendConn) Begin() (driver.Tx, error) { return instantBackendTx{}, nil }
func (*instantBackendConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return instantBackendTx{}, nil
}
func (*instantBackendConn) Ping(context.Context) error         { return nil }
func (*instantBackendConn) ResetSession(context.Context) error { return nil }
func (*instantBackendConn) IsValid() bool                      { return true }
func (c *instantBackendConn) CheckNamedValue(nv *driver.NamedValue) error {
	c.be.checks.Add(1)
	v, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
	nv.Value = v
	return err
}
func (*instantBackendConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	evictCaches()
	return &instantBackendRows{text: q}, nil
}
func (*instantBackendConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	evictCaches()
	return driver.RowsAffected(1), nil
}

type instantBackendStmt struct{}

func (*instantBackendStmt) Close() error  { return nil }
func (*instantBackendStmt) NumInput() int { return -1 }
func (*instantBackendStmt) Exec([]driver.Value) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}
func (*instantBackendStmt) Query([]driver.Value) (driver.Rows, error) {
	return &instantBackendRows{}, nil
}
func (*instantBackendStmt) ExecContext(context.Context, []driver.NamedValue) (driver.Result, error) {
	evictCaches()
	return driver.RowsAffected(1), nil
}
func (*instantBackendStmt) QueryContext(context.Context, []driver.NamedValue) (driver.Rows, error) {
	evictCaches()
	return &instantBackendRows{}, nil
}

type instantBackendTx struct{}

func (instantBackendTx) Commit() error   { return nil }
func (instantBackendTx) Rollback() error { return nil }

// instantBackendRows is one row: 7, the query's text (or "row" for a
// prepared statement), "data", 1.5.
type instantBackendRows struct {
	text string
	done bool
}

func (*instantBackendRows) Columns() []string { return []string{"a", "b", "c", "d"} }
func (*instantBackendRows) Close() error      { return nil }
func (r *instantBackendRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0], dest[1], dest[2], dest[3] = int64(7), cmp.Or(r.text, "row"), []byte("data"), 1.5
	return nil
}

// Each argument is converted once, by the backend driver's own
// CheckNamedValue: in a transaction while database/sql checks the
// arguments (the logical connection holds its backend connection), else
// when the statement reaches the backend it was routed to; prepared or
// not.
func TestArgumentsConvertedOnce(t *testing.T) {
	// Unbounded, the logical connection keeps the primary connection it
	// took (CheckNamedValue converts); with a bounded primary pool it
	// gives it back after each statement outside a transaction (the
	// backend converts).
	for _, maxOpen := range []int{0, 4} {
		t.Run(fmt.Sprintf("maxOpenConns=%d", maxOpen), func(t *testing.T) { argumentsConvertedOnce(t, maxOpen) })
	}
}

func argumentsConvertedOnce(t *testing.T, maxOpen int) {
	be := &instantBackend{}
	db := openInstant(t, be, maxOpen)
	ctx := context.Background()
	args := []any{1, "two", 3.0}
	run := func(name string, f func() error) {
		t.Helper()
		before := be.checks.Load()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := be.checks.Load() - before; got != int64(len(args)) {
			t.Errorf("%s: %d conversions of %d arguments, want one each", name, got, len(args))
		}
	}
	query := func(q func() (*sql.Rows, error)) func() error {
		return func() error {
			rows, err := q()
			if err != nil {
				return err
			}
			return rows.Close()
		}
	}
	const read, write = "SELECT a FROM t WHERE a = ? AND b = ? AND c = ?", "UPDATE t SET a = ? WHERE b = ? AND c = ?"
	st, err := db.PrepareContext(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run("autocommit read", query(func() (*sql.Rows, error) { return db.QueryContext(ctx, read, args...) }))
	run("autocommit write", func() error { _, err := db.ExecContext(ctx, write, args...); return err })
	run("prepared autocommit read", query(func() (*sql.Rows, error) { return st.QueryContext(ctx, args...) }))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	run("read in a transaction", query(func() (*sql.Rows, error) { return tx.QueryContext(ctx, read, args...) }))
	run("write in a transaction", func() error { _, err := tx.ExecContext(ctx, write, args...); return err })
	run("prepared read in a transaction", query(func() (*sql.Rows, error) { return tx.StmtContext(ctx, st).QueryContext(ctx, args...) }))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A result set of the held connection reuses the connection's own rows
// wrapper only while no other is open: two open at once, and one opened
// after the first closed, each read their own rows.
func TestHeldRowsReuse(t *testing.T) {
	db := openInstant(t, &instantBackend{}, 0)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	open := func(q string) *sql.Rows {
		t.Helper()
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	read := func(rows *sql.Rows, want string) {
		t.Helper()
		var a int
		var text, data string
		var f float64
		if !rows.Next() {
			t.Fatalf("%s: no row: %v", want, rows.Err())
		}
		if err := rows.Scan(&a, &text, &data, &f); err != nil {
			t.Fatal(err)
		}
		if text != want {
			t.Errorf("rows of %q read %q", want, text)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	first, second := open("SELECT 'first'"), open("SELECT 'second'")
	read(first, "SELECT 'first'")
	third := open("SELECT 'third'")
	read(second, "SELECT 'second'")
	read(third, "SELECT 'third'")
}
