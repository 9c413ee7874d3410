package labtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
)

// DSN is an rwshard DSN over every node of l's first group, primary
// first, as the application user.
func DSN(l *lab.Lab, params string) string {
	return UserDSN(l, lab.AppUser, lab.AppPassword, params)
}

// PlainDSN is DSN as lab.PlainUser, who has GRANT ALL ON app.* and nothing
// more.
func PlainDSN(l *lab.Lab, params string) string {
	return UserDSN(l, lab.PlainUser, lab.PlainPassword, params)
}

// UserDSN is DSN as another user.
func UserDSN(l *lab.Lab, user, password, params string) string {
	hosts := []string{"tcp(" + l.Primary().Addr() + ")"}
	for _, r := range l.Replicas() {
		hosts = append(hosts, "tcp("+r.Addr()+")")
	}
	dsn := fmt.Sprintf("%s:%s@%s/%s", user, password, strings.Join(hosts, ","), lab.AppDatabase)
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

// Open opens rwshard over l, closed when the test ends, and waits until
// health has probed every node once (Connector.Ready), so that replicas
// serve from the first statement.
func Open(t testing.TB, l *lab.Lab, params string) *sql.DB {
	t.Helper()
	return openReady(t, DSN(l, params))
}

// OpenPlain is Open as the user production most often gives an
// application (lab.PlainUser: GRANT ALL ON app.* and nothing more).
func OpenPlain(t testing.TB, l *lab.Lab, params string) *sql.DB {
	t.Helper()
	return openReady(t, PlainDSN(l, params))
}

// openReady is Open's and OpenPlain's work, over dsn.
func openReady(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db := open(t, rwshard.DriverName, dsn)
	WaitReady(t, db)
	return db
}

// OpenTraced is Open with tracer as Config.Tracer, over dsn.
func OpenTraced(t testing.TB, dsn string, tracer rwshard.Tracer) *sql.DB {
	t.Helper()
	cfg, err := rwshard.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = tracer
	c, err := rwshard.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	WaitReady(t, db)
	return db
}

// WaitReady waits until db's health has probed every node once.
func WaitReady(t testing.TB, db *sql.DB) {
	t.Helper()
	ctx := Ctx(t, 30*time.Second)
	c, err := rwshard.ConnectorOf(ctx, db)
	if err == nil {
		err = c.Ready(ctx)
	}
	if err != nil {
		t.Fatalf("rwshard not ready: %v", err)
	}
}

// Direct opens go-sql-driver/mysql to one node as the application user,
// closed when the test ends.
func Direct(t testing.TB, n *lab.Node, params string) *sql.DB {
	t.Helper()
	return open(t, "mysql", n.DSN(params))
}

func open(t testing.TB, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatalf("sql.Open(%s): %v", driverName, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Querier is a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// RanOn runs a query whose one value is @@server_id and names the node
// that answered.
func RanOn(t testing.TB, l *lab.Lab, db Querier, ctx context.Context, query string, args ...any) string {
	t.Helper()
	var id int64
	if err := db.QueryRowContext(ctx, query, args...).Scan(&id); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return l.NodeByServerID(id)
}

// Setup runs statements on the primary as the application user and waits
// until the replicas have them.
func Setup(t testing.TB, l *lab.Lab, stmts ...string) {
	t.Helper()
	ctx := Ctx(t, time.Minute)
	db := Direct(t, l.Primary(), "multiStatements=true")
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := l.Sync(ctx, 20*time.Second); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// StatusCounter reads a global status counter on n.
func StatusCounter(t testing.TB, n *lab.Node, name string) int64 {
	t.Helper()
	var k string
	var v int64
	if err := n.Admin().QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		t.Fatalf("SHOW GLOBAL STATUS LIKE %q: %v", name, err)
	}
	return v
}

// Proxy starts a lab.Proxy to target, closed when the test ends.
func Proxy(t testing.TB, target string) *lab.Proxy {
	t.Helper()
	p, err := lab.NewProxy(target)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// NodeStatus reads n's statement counters: Questions, Com_select,
// Com_show_slave_status and Connections.
func NodeStatus(t testing.TB, n *lab.Node) map[string]int64 {
	t.Helper()
	return Status(t, n, "Questions", "Com_select", "Com_show_slave_status", "Connections")
}

// Status reads global status counters of n through the lab's root
// connection; every name must exist. The SHOW itself bumps only
// Com_show_status and Questions.
func Status(t testing.TB, n *lab.Node, names ...string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := n.Admin().QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(names, "','")+"')")
	if err != nil {
		t.Fatalf("%s: SHOW GLOBAL STATUS: %v", n.Name, err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil || len(m) != len(names) {
		t.Fatalf("%s: status %v of %v: %v", n.Name, m, names, err)
	}
	return m
}
