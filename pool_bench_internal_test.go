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
			pc, err := p.get(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.put(pc, false)
		}
	})
	b.Run("rwshard-acquire-release-handle", func(b *testing.B) {
		n := &node{name: "n", db: db}
		b.ReportAllocs()
		for b.Loop() {
			be, err := n.acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			be.release(false)
		}
	})
	b.Run("rwshard-acquire-release", func(b *testing.B) {
		n := &node{name: "n", conns: newConnPool(&nodeConnector{inner: nopConnector{}}, 0, 4, 0, 0)}
		defer n.conns.close()
		b.ReportAllocs()
		for b.Loop() {
			be, err := n.acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			be.release(false)
		}
	})
	b.Run("rwshard-acquire-release-handle-parallel", func(b *testing.B) {
		n := &node{name: "n", db: db}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				be, err := n.acquire(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				be.release(false)
			}
		})
	})
}

func BenchmarkPoolCheckoutParallel(b *testing.B) {
	n := &node{name: "n", conns: newConnPool(&nodeConnector{inner: nopConnector{}}, 0, 16, 0, 0)}
	defer n.conns.close()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			be, err := n.acquire(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			be.release(false)
		}
	})
}
