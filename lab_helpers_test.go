package rwshard_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// rwLab is the primary + 2 replicas lab shared by this package's
// integration tests; tests that break it start their own.
var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

// labDSN is an rwshard DSN over every node of l's first group, primary
// first, as the application user.
func labDSN(l *lab.Lab, params string) string {
	hosts := []string{"tcp(" + l.Primary().Addr() + ")"}
	for _, r := range l.Replicas() {
		hosts = append(hosts, "tcp("+r.Addr()+")")
	}
	dsn := fmt.Sprintf("%s:%s@%s/%s", lab.AppUser, lab.AppPassword, strings.Join(hosts, ","), lab.AppDatabase)
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

// openLab opens rwshard over l.
func openLab(t testing.TB, l *lab.Lab, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open(rwshard.DriverName, labDSN(l, params))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// direct opens go-sql-driver/mysql to one node.
func direct(t testing.TB, n *lab.Node, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", n.DSN(params))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// ranOn runs "SELECT @@server_id" style queries and names the node.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func ranOn(t testing.TB, l *lab.Lab, db querier, ctx context.Context, query string, args ...any) string {
	t.Helper()
	var id int64
	require.NoError(t, db.QueryRowContext(ctx, query, args...).Scan(&id), query)
	return l.NodeByServerID(id)
}

// setup runs statements on the primary as the application user and waits
// until the replicas have them.
func setup(t testing.TB, l *lab.Lab, stmts ...string) {
	t.Helper()
	ctx := labtest.Ctx(t, time.Minute)
	db := direct(t, l.Primary(), "multiStatements=true")
	for _, s := range stmts {
		_, err := db.ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
	require.NoError(t, l.Sync(ctx, 20*time.Second))
}

// statusCounter reads a global status counter on n.
func statusCounter(t testing.TB, n *lab.Node, name string) int64 {
	t.Helper()
	var k string
	var v int64
	require.NoError(t, n.Admin().QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v))
	return v
}
