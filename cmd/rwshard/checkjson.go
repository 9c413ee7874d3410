package main

import (
	"slices"
	"time"
)

// checkJSON is check's report with -json.
type checkJSON struct {
	// Rules: the proof of a sharding rules file; absent without one.
	Rules  *rulesJSON       `json:"rules,omitempty"`
	Groups []checkGroupJSON `json:"groups"`
	// XA: branches left prepared, with a rules file; absent without one.
	XA       *xaReport `json:"xa,omitempty"`
	Problems int       `json:"problems"` // over the rules, every group and XA
}

// checkGroupJSON is one group's report: the nodes of CONFIG, or of one
// data source.
type checkGroupJSON struct {
	Name     string          `json:"name"` // the data source; "" without sharding
	DSN      string          `json:"dsn"`  // password redacted
	User     string          `json:"user"`
	Database string          `json:"database"`
	Nodes    []checkNodeJSON `json:"nodes"`
	Problems []string        `json:"problems"`
	Warnings []string        `json:"warnings"`
	TookMS   int64           `json:"took_ms"`
	// DataNodes: the physical tables the rules place on the data source
	// and what its primary holds of them; absent without sharding. Each
	// one missing is also in Problems.
	DataNodes *dataNodesJSON `json:"data_nodes,omitempty"`
}

// checkNodeJSON is one node's row. Readings the node did not give (not
// reached, not a replica, Seconds_Behind_Master NULL) are null.
type checkNodeJSON struct {
	Name      string `json:"name"`
	Net       string `json:"net"`
	Addr      string `json:"addr"`
	Reachable bool   `json:"reachable"`
	// Connect is ok, denied (wrong password), unreachable, or error (a
	// check statement failed).
	Connect string `json:"connect"`
	Error   string `json:"error,omitempty"`
	Version string `json:"version,omitempty"`
	// Role is primary, replica, "replica, writable", "read-only, not
	// replicating", or "" when unknown.
	Role               string  `json:"role"`
	ReadOnly           *bool   `json:"read_only"`
	Replica            bool    `json:"replica"`
	IOThread           *string `json:"io_thread"`
	SQLThread          *string `json:"sql_thread"`
	SecondsBehind      *int64  `json:"seconds_behind"`
	LastIOError        string  `json:"last_io_error,omitempty"`
	LastSQLError       string  `json:"last_sql_error,omitempty"`
	WaitTimeoutSeconds *int64  `json:"wait_timeout_seconds"`
	// ConnMaxLifetimeSeconds is the node's rwshard.connMaxLifetime; 0 is
	// unlimited.
	ConnMaxLifetimeSeconds float64 `json:"conn_max_lifetime_seconds"`
	// ReplicaStatusDenied: the user may not run SHOW REPLICA STATUS.
	ReplicaStatusDenied bool `json:"replica_status_denied,omitempty"`
	// BypassesReadOnly is the privilege that lets the user write despite
	// read_only, or "".
	BypassesReadOnly string `json:"bypasses_read_only,omitempty"`
}

// jsonReport is the report as group name of checkJSON. Texts from the
// servers are scrubbed of the password, as in print.
func (r *checkReport) jsonReport(name string) checkGroupJSON {
	cfg := r.cfg
	g := checkGroupJSON{Name: name, DSN: r.dsn, User: cfg.Backend.User, Database: cfg.Backend.DBName,
		Nodes: []checkNodeJSON{}, Problems: slices.Clone(r.problems), Warnings: slices.Clone(r.warnings),
		TookMS: r.took.Milliseconds()}
	if r.dataNodes != nil {
		g.DataNodes = r.dataNodes.json()
	}
	if g.Problems == nil {
		g.Problems = []string{}
	}
	if g.Warnings == nil {
		g.Warnings = []string{}
	}
	for _, n := range r.nodes {
		j := checkNodeJSON{Name: n.node.Name, Net: n.node.Net, Addr: n.node.Addr, Reachable: n.reached(),
			Connect: n.connectState(), Role: n.role(), Replica: n.replica,
			ConnMaxLifetimeSeconds: n.lifetime.Seconds(), ReplicaStatusDenied: n.noReplicaStatus,
			BypassesReadOnly: n.bypassesRO}
		if j.Role == "-" {
			j.Role = ""
		}
		switch {
		case !n.reached():
			j.Error = n.errMsg
		case n.queryErr != nil:
			j.Error = "check failed: " + scrub(cfg, n.queryErr.Error())
		}
		if n.reached() && n.version != "" {
			j.Version = n.version
			ro, wait := n.readOnly, int64(n.waitTimeout/time.Second)
			j.ReadOnly, j.WaitTimeoutSeconds = &ro, &wait
		}
		if n.replica {
			io, sqlT := n.ioThread, n.sqlThread
			j.IOThread, j.SQLThread = &io, &sqlT
			if n.behind.Valid {
				behind := n.behind.Int64
				j.SecondsBehind = &behind
			}
			j.LastIOError, j.LastSQLError = scrub(cfg, n.ioError), scrub(cfg, n.sqlError)
		}
		g.Nodes = append(g.Nodes, j)
	}
	return g
}
