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

// The per-statement cost of rwshard's use of database/sql's per-node
// pools (issue: own the pools or not): DB.Conn + Conn.Raw + Close, and
// the in-flight tracking rwshard adds (node.acquire / backend.release).
// The figures decide whether a pool of rwshard's own would pay for its
// risk; see the README's Performance section.
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
	b.Run("rwshard-acquire-release", func(b *testing.B) {
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
	b.Run("rwshard-acquire-release-parallel", func(b *testing.B) {
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
