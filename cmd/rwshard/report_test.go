package main

import (
	"bytes"
	"database/sql"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// Pure tests of check's verdicts and lag's table, on made-up readings: the
// cases the lab tests do not set up.

func healthyPrimary() *nodeCheck {
	return &nodeCheck{node: rwshard.Node{Name: "primary", Net: "tcp", Addr: "10.0.0.1:3306"}, lifetime: 3 * time.Minute,
		version: "10.11.6-MariaDB", waitTimeout: 8 * time.Hour}
}

func healthyReplica(name string) *nodeCheck {
	return &nodeCheck{node: rwshard.Node{Name: name, Net: "tcp", Addr: "10.0.0.2:3306"}, lifetime: 3 * time.Minute,
		version: "10.11.6-MariaDB", waitTimeout: 8 * time.Hour, readOnly: true, replica: true,
		ioThread: "Yes", sqlThread: "Yes", behind: sql.NullInt64{Valid: true}}
}

func TestCheckVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(cfg *rwshard.Config, p, r1, r2 *nodeCheck)
		problems []string
		warnings []string
	}{
		{name: "healthy", edit: func(*rwshard.Config, *nodeCheck, *nodeCheck, *nodeCheck) {}},
		{name: "first host read-only", edit: func(_ *rwshard.Config, p, _, _ *nodeCheck) { p.readOnly = true },
			problems: []string{"primary: first host is not writable (read_only=ON)", "cluster: no writable node"}},
		{name: "replicas swapped roles", edit: func(_ *rwshard.Config, p, r1, _ *nodeCheck) {
			p.readOnly, p.replica, p.ioThread, p.sqlThread = true, true, "Yes", "Yes"
			r1.readOnly, r1.replica = false, false
		}, problems: []string{"primary: first host is not writable", "replica1: writable (read_only=OFF)",
			"replica1: not replicating: no replica status"}},
		{name: "io thread connecting", edit: func(_ *rwshard.Config, _, _, r2 *nodeCheck) {
			r2.ioThread, r2.ioError, r2.behind = "Connecting", "error connecting to master", sql.NullInt64{}
		}, problems: []string{"replica2: replication not running: IO thread Connecting, SQL thread Yes; last IO error: error connecting to master"}},
		{name: "sql thread stopped on error", edit: func(_ *rwshard.Config, _, r1, _ *nodeCheck) {
			r1.sqlThread, r1.sqlError = "No", "Duplicate entry"
		}, problems: []string{"replica1: replication not running: IO thread Yes, SQL thread No; last SQL error: Duplicate entry"}},
		{name: "unlimited lifetime", edit: func(_ *rwshard.Config, p, _, _ *nodeCheck) { p.lifetime = 0 },
			problems: []string{"primary: rwshard.connMaxLifetime=0 (unlimited) is not below wait_timeout=8h0m0s"}},
		{name: "lifetime equal to a lowered wait_timeout", edit: func(_ *rwshard.Config, _, r1, _ *nodeCheck) {
			r1.waitTimeout = 3 * time.Minute
		}, problems: []string{"replica1: rwshard.connMaxLifetime=3m0s is not below wait_timeout=3m0s"}},
		{name: "primary unreachable", edit: func(_ *rwshard.Config, p, _, _ *nodeCheck) {
			p.err, p.errMsg = errors.New("refused"), "unreachable: refused"
		}, problems: []string{"primary: unreachable: refused"}},
		{name: "statement failed", edit: func(_ *rwshard.Config, _, r1, _ *nodeCheck) {
			r1.queryErr = errors.New("replica status: Error 1227: Access denied; you need REPLICA MONITOR")
		}, problems: []string{"replica1: check failed: replica status: Error 1227"}},
		{name: "lag over the limit", edit: func(cfg *rwshard.Config, _, r1, _ *nodeCheck) {
			r1.behind = sql.NullInt64{Int64: 45, Valid: true}
		}, warnings: []string{"replica1: Seconds_Behind_Master=45 is over rwshard.maxReplicaLag=30s"}},
		{name: "super user", edit: func(_ *rwshard.Config, p, r1, r2 *nodeCheck) {
			p.bypassesRO, r1.bypassesRO, r2.bypassesRO = "SUPER", "SUPER", "SUPER"
		}, warnings: []string{`user "app" may write despite read_only on replica1 (SUPER), replica2 (SUPER)`}},
		{name: "zero weight", edit: func(cfg *rwshard.Config, _, _, _ *nodeCheck) {
			cfg.Weights = map[string]float64{"primary": 0, "replica1": 1, "replica2": 0}
		}, warnings: []string{"rwshard.weights gives replica2 weight 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rwshard.NewConfig()
			cfg.Backend.User = "app"
			p, r1, r2 := healthyPrimary(), healthyReplica("replica1"), healthyReplica("replica2")
			tc.edit(cfg, p, r1, r2)
			rep := &checkReport{cfg: cfg, nodes: []*nodeCheck{p, r1, r2}}
			rep.evaluate()
			require.Len(t, rep.problems, len(tc.problems), "%q", rep.problems)
			for i, want := range tc.problems {
				assert.Contains(t, rep.problems[i], want)
			}
			require.Len(t, rep.warnings, len(tc.warnings), "%q", rep.warnings)
			for i, want := range tc.warnings {
				assert.Contains(t, rep.warnings[i], want)
			}
			var out bytes.Buffer
			rep.print(&out) // every state prints
			assert.Contains(t, out.String(), "NODE")
		})
	}
}

func TestCheckConnectTimeoutZeroWarns(t *testing.T) {
	cfg, err := rwshard.ParseDSN("app:pw@tcp(127.0.0.1:1)/app?rwshard.connectTimeout=0s")
	require.NoError(t, err)
	rep := checkCluster(t.Context(), cfg, time.Second)
	require.Len(t, rep.warnings, 2)
	assert.Contains(t, rep.warnings[0], "rwshard.connectTimeout=0: connecting is not bounded")
	assert.Contains(t, rep.warnings[1], "one host: every statement goes to it")
	require.Len(t, rep.problems, 1)
	assert.Contains(t, rep.problems[0], "primary: unreachable: dial tcp 127.0.0.1:1")
}

func TestPrintStats(t *testing.T) {
	var out bytes.Buffer
	bad := printStats(&out, rwshard.Stats{Nodes: []rwshard.NodeStats{
		{Name: "primary", Primary: true, Up: true, Queries: 12},
		{Name: "replica1", Up: true, LagKnown: true, Lag: 1500 * time.Microsecond, InFlight: 2, Queries: 30, Errors: 1},
		{Name: "replica2", Up: true, Fenced: true, LagKnown: true, Lag: math.MaxInt64},
		{Name: "replica3"},
	}}, time.Date(2024, 1, 2, 15, 4, 5, 0, time.UTC))
	assert.Equal(t, 2, bad) // replica2 fenced, replica3 down
	assert.Contains(t, out.String(), "15:04:05  4 nodes: 3 up, 1 fenced\n")
	assert.Regexp(t, `(?m)^primary\s+primary\s+yes\s+no\s+-\s+0\s+12\s+0$`, out.String())
	assert.Regexp(t, `(?m)^replica1\s+replica\s+yes\s+no\s+2ms\s+2\s+30\s+1$`, out.String())
	assert.Regexp(t, `(?m)^replica2\s+replica\s+yes\s+yes\s+stopped\s+0\s+0\s+0$`, out.String())
	assert.Regexp(t, `(?m)^replica3\s+replica\s+no\s+no\s+unknown\s+0\s+0\s+0$`, out.String())
}
