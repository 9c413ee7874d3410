package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"
)

// nopConn is a driver connection that does nothing: what checking a
// backend connection out of a node's pool costs, without a server.
type nopConn struct{}

func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }

type nopConnector struct{}

func (nopConnector) Connect(context.Context) (driver.Conn, error) { return nopConn{}, nil }
func (nopConnector) Driver() driver.Driver                        { return nil }

// The per-statement cost of checking a backend connection out of a
// node's pool: database/sql's (DB.Conn + Conn.Raw + Close, what rwshard
// does over handles given to OpenDB), rwshard's own (connPool), and each
// with the in-flight tracking rwshard adds (node.acquire /
// backend.release). See the README's Performance section.
func BenchmarkPoolCheckout(b *testing.B) {
	db := sql.OpenDB(&nodeConnector{inner: nopConnector{}})
	db.SetMaxIdleConns(4)
	defer db.Close()
	ctx := context.Background()
	b.Run("database-sql-conn-raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sc, err := db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			_ = sc.Raw(func(any) error { return nil })
			sc.Close()
		}
	})
	b.Run("connpool-get-put", func(b *testing.B) {
		p := newConnPool(&nodeConnector{inner: nopConnector{}}, 0, 4, 0, 0)
		defer p.close()
		b.ReportAllocs()
		for b.Loop() {
			pc, err := p.get(ctx, "")
			if err != nil {
				b.Fatal(err)
			}
			p.put(pc, false)
		}
	})
	// Through node.acquire/release, over the handle and over connPool,
	// one goroutine and in parallel.
	handle := &node{name: "n", db: db}
	own := &node{name: "n", conns: newConnPool(&nodeConnector{inner: nopConnector{}}, 0, 16, 0, 0)}
	defer own.conns.close()
	b.Run("rwshard-acquire-release-handle", func(b *testing.B) { benchAcquire(b, handle, false) })
	b.Run("rwshard-acquire-release", func(b *testing.B) { benchAcquire(b, own, false) })
	b.Run("rwshard-acquire-release-handle-parallel", func(b *testing.B) { benchAcquire(b, handle, true) })
	b.Run("rwshard-acquire-release-parallel", func(b *testing.B) { benchAcquire(b, own, true) })
}

// benchAcquire checks a connection of n out and back, from one goroutine
// or from GOMAXPROCS in parallel.
func benchAcquire(b *testing.B, n *node, parallel bool) {
	ctx := context.Background()
	once := func() bool {
		be, err := n.acquire(ctx, "")
		if err != nil {
			b.Error(err)
			return false
		}
		be.release(false)
		return true
	}
	b.ReportAllocs()
	if !parallel {
		for b.Loop() {
			if !once() {
				return
			}
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() && once() {
		}
	})
}
