package tpcc_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// The two sides of every comparison.
const (
	direct = "direct"  // go-sql-driver/mysql to the primary
	viaRW  = "rwshard" // rwshard over the primary and both replicas, default settings
)

// pairOrder is the order of the two runs of pair p (from 0): direct
// first in even pairs, rwshard first in odd ones, so that neither side
// always runs on the warmer (or the noisier) half of a pair.
func pairOrder(p int) []string {
	o := []string{direct, viaRW}
	if p%2 == 1 {
		slices.Reverse(o)
	}
	return o
}

// openSide opens one side with the same DSN parameters as the other and
// a database/sql pool sized as go-tpc's CLI sizes its own (idle
// connections: the client threads + 2, no limit on open ones). rwshard's
// own per-node pools keep its defaults. The rwshard side is ready (every
// node probed once) on return. The caller closes the handle when its run
// ends, so that rwshard's health probes run only during its own runs.
func openSide(t testing.TB, l *lab.Lab, side, params string, clients int) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch side {
	case direct:
		db, err = sql.Open("mysql", appDSN(l.Primary(), params))
	case viaRW:
		if *rwParams != "" {
			params = strings.TrimPrefix(params+"&"+*rwParams, "&")
		}
		db, err = sql.Open(rwshard.DriverName, labtest.PlainDSN(l, params))
	default:
		t.Fatalf("unknown side %q", side)
	}
	if err != nil {
		t.Fatalf("%s: sql.Open: %v", side, err)
	}
	db.SetMaxIdleConns(clients + 2)
	if side == viaRW {
		labtest.WaitReady(t, db)
	} else if err := db.Ping(); err != nil {
		db.Close()
		t.Fatalf("%s: ping: %v", side, err)
	}
	return db
}

// appUser is the application user every client of the benchmarks
// connects as, on both sides: the one production most often gives an
// application, with GRANT ALL ON app.* and nothing more (no REPLICA
// MONITOR: rwshard's probes then read roles from read_only and lag from
// GTID positions).
const appUser = lab.PlainUser

// appDSN is a go-sql-driver DSN of node n as appUser.
func appDSN(n *lab.Node, params string) string { return n.UserDSN(appUser, lab.PlainPassword, params) }

// nodeDB opens go-sql-driver/mysql to one node as the application user.
func nodeDB(t testing.TB, n *lab.Node, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", appDSN(n, params))
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rwStats is the rwshard connector's snapshot behind db.
func rwStats(t testing.TB, db *sql.DB) rwshard.Stats {
	t.Helper()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return c.Stats()
}

// syncReplicas waits until both replicas have applied everything.
func syncReplicas(t testing.TB, l *lab.Lab, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	if err := l.Sync(ctx, timeout); err != nil {
		t.Fatalf("replicas did not catch up: %v", err)
	}
}
