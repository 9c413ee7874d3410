package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"strings"
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
	stats := rwshard.Stats{Nodes: []rwshard.NodeStats{
		{Name: "primary", Primary: true, Up: true, Queries: 12},
		{Name: "replica1", Up: true, LagKnown: true, Lag: 1500 * time.Microsecond, InFlight: 2, Queries: 30, Errors: 1},
		{Name: "replica2", Up: true, Fenced: true, LagKnown: true, Lag: math.MaxInt64},
		{Name: "replica3"},
	}}
	health := rwshard.Health{Groups: []rwshard.GroupHealth{{Nodes: []rwshard.NodeHealth{
		{Name: "primary"}, {Name: "replica1"},
		{Name: "replica2", Reason: "fenced: replication stopped"},
		{Name: "replica3", Reason: "down: dial tcp 10.0.0.4:3306: connect: connection refused"},
	}}}}
	now := time.Date(2024, 1, 2, 15, 4, 5, 0, time.UTC)
	var out bytes.Buffer
	bad := printStats(&out, stats, health, now)
	assert.Equal(t, 2, bad) // replica2 fenced, replica3 down
	assert.Contains(t, out.String(), "15:04:05  4 nodes: 3 up, 1 fenced\n")
	assert.Regexp(t, `(?m)^NODE\s+ROLE\s+UP\s+FENCED\s+LAG\s+IN_FLIGHT\s+QUERIES\s+ERRORS\s+REASON$`, out.String())
	assert.Regexp(t, `(?m)^primary\s+primary\s+yes\s+no\s+-\s+0\s+12\s+0\s+-$`, out.String())
	assert.Regexp(t, `(?m)^replica1\s+replica\s+yes\s+no\s+2ms\s+2\s+30\s+1\s+-$`, out.String())
	assert.Regexp(t, `(?m)^replica2\s+replica\s+yes\s+yes\s+stopped\s+0\s+0\s+0\s+fenced: replication stopped$`, out.String())
	assert.Regexp(t, `(?m)^replica3\s+replica\s+no\s+no\s+unknown\s+0\s+0\s+0\s+down: dial tcp 10.0.0.4:3306: connect: connection refused$`, out.String())

	out.Reset()
	bad = printStatsJSON(&out, stats, health, now)
	assert.Equal(t, 2, bad)
	require.Equal(t, 1, strings.Count(out.String(), "\n"), "one line per refresh: %s", out.String())
	var got struct {
		Time  string
		Nodes []map[string]any
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	ts, err := time.Parse(time.RFC3339, got.Time)
	require.NoError(t, err)
	assert.True(t, ts.Equal(now), got.Time)
	require.Len(t, got.Nodes, 4)
	for i, want := range []map[string]any{
		{"name": "primary", "role": "primary", "up": true, "fenced": false, "lag_seconds": nil, "in_flight": 0.0, "queries": 12.0, "errors": 0.0, "reason": ""},
		{"name": "replica1", "role": "replica", "up": true, "fenced": false, "lag_seconds": 0.0015, "in_flight": 2.0, "queries": 30.0, "errors": 1.0, "reason": ""},
		{"name": "replica2", "role": "replica", "up": true, "fenced": true, "lag_seconds": -1.0, "in_flight": 0.0, "queries": 0.0, "errors": 0.0, "reason": "fenced: replication stopped"},
		{"name": "replica3", "role": "replica", "up": false, "fenced": false, "lag_seconds": nil, "in_flight": 0.0, "queries": 0.0, "errors": 0.0,
			"reason": "down: dial tcp 10.0.0.4:3306: connect: connection refused"},
	} {
		assert.Equal(t, want, got.Nodes[i], "node %d", i)
	}
}

// The JSON report of a made-up cluster: every reading in its field, null
// where the node gave none, the password nowhere.
func TestCheckReportJSON(t *testing.T) {
	cfg, err := rwshard.ParseDSN("app:Secret-Pw-9@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop")
	require.NoError(t, err)
	p, r1 := healthyPrimary(), healthyReplica("replica1")
	r1.ioThread, r1.sqlThread, r1.behind, r1.ioError = "No", "No", sql.NullInt64{}, "error reconnecting: password Secret-Pw-9 refused"
	r2 := &nodeCheck{node: rwshard.Node{Name: "replica2", Net: "tcp", Addr: "10.0.0.3:3306"}, lifetime: 3 * time.Minute,
		err: errors.New("refused"), errMsg: "unreachable: refused"}
	rep := &checkReport{dsn: redactedDSN(cfg), cfg: cfg, nodes: []*nodeCheck{p, r1, r2}, took: 1500 * time.Millisecond}
	rep.evaluate()
	var out bytes.Buffer
	require.NoError(t, encodeJSON(&out, rep.jsonReport("ds_0"), false))
	assert.NotContains(t, out.String(), "Secret-Pw-9")
	var g map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &g))
	assert.Equal(t, "ds_0", g["name"])
	assert.Equal(t, "app:***@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop", g["dsn"])
	assert.Equal(t, 1500.0, g["took_ms"])
	assert.Len(t, g["problems"], 2)
	assert.Equal(t, []any{}, g["warnings"])
	nodes := g["nodes"].([]any)
	require.Len(t, nodes, 3)
	prim, rep1, rep2 := nodes[0].(map[string]any), nodes[1].(map[string]any), nodes[2].(map[string]any)
	assert.Equal(t, map[string]any{"name": "primary", "net": "tcp", "addr": "10.0.0.1:3306", "reachable": true, "connect": "ok",
		"version": "10.11.6-MariaDB", "role": "primary", "read_only": false, "replica": false, "io_thread": nil, "sql_thread": nil,
		"seconds_behind": nil, "wait_timeout_seconds": 28800.0, "conn_max_lifetime_seconds": 180.0}, prim)
	assert.Equal(t, "replica", rep1["role"])
	assert.Equal(t, true, rep1["read_only"])
	assert.Equal(t, "No", rep1["io_thread"])
	assert.Nil(t, rep1["seconds_behind"], "NULL")
	assert.Equal(t, "error reconnecting: password *** refused", rep1["last_io_error"])
	assert.Equal(t, false, rep2["reachable"])
	assert.Equal(t, "unreachable", rep2["connect"])
	assert.Equal(t, "unreachable: refused", rep2["error"])
	assert.Equal(t, "", rep2["role"])
	assert.Nil(t, rep2["read_only"])
	assert.Nil(t, rep2["wait_timeout_seconds"])
}
