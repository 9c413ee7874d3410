package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/shard"
)

func checkCommand() *command {
	return &command{
		name: "check",
		args: "[flags] CONFIG|DSN",
		summary: `Connects to every node of CONFIG directly (go-sql-driver/mysql, each
connection bounded by rwshard.connectTimeout) and reports, per node:
reachable, server version, role, @@read_only, replication IO/SQL threads
and Seconds_Behind_Master, and @@wait_timeout. Problems (exit status 1):
an unreachable node, a wrong password, a first host that is not writable
or another host that is, a replica whose replication threads are not both
running or that does not replicate, rwshard.connMaxLifetime not below a
node's wait_timeout. Warnings (exit status 0): one host only (nothing is
split), a replica weighted 0, a replica over rwshard.maxReplicaLag, a user
whose privileges bypass read_only, no connect timeout.

With a sharding rules file, check first proves the rules without a
server, as sql.Open does: every target each strategy's algorithm can pick
for a key of the right type is one of the table's data nodes (MOD,
HASH_MOD and SS_HASH_MOD remainders, range partitions, INTERVAL steps,
the names of an INLINE expression), and binding tables are laid out
alike. It lists every problem (sql.Open stops at the first), each naming
the file, line and key, the table, the algorithm and the missing targets,
and the strategies it could not prove (custom algorithms, INLINE
expressions that name a target per key). Rules that do not build stop it
there. Then it verifies each data source's data nodes on its primary, in
the database of the data source's DSN (two queries per data source:
information_schema.TABLES and COLUMNS): every physical table the rules
place there exists (broadcast tables on every data source) and has the
table's sharding columns (database and table strategy, key generator), of
one kind of type (integer, number, string, binary, time) in every
physical table of a logical table and of the tables bound to it. Each
missing table or column, and each column of another kind, is a problem
naming the data source, the physical and the logical table (and the
column); a data source that answers but holds none of them is one problem
of its own: its DSN likely points at the wrong server or database.

With -json, stdout is one JSON document: {"rules": {"file", "loaded",
"tables", "data_sources", "problems": [{"message", "file", "line", "key",
"table", "strategy", "algorithm", "data_sources", "missing"}],
"not_proved": […]}, "groups": [{"name", "dsn", "nodes": [{"name",
"addr", "reachable", "connect", "error", "version", "role", "read_only",
"replica", "io_thread", "sql_thread", "seconds_behind",
"wait_timeout_seconds", …}], "problems": […], "warnings": […],
"data_nodes": {…}}], "problems": N}, one group per data source of a
sharding rules file (name "" otherwise). rules and data_nodes only with a
rules file; data_nodes: {"database", "node", "checked", "error",
"placed", "found", "other_tables", "tables": [{"table", "logical",
"broadcast", "exists", "columns", "missing_columns", "column_types"}]}.
Every missing table or column is in the group's problems too; the
problems of the rules count in "problems". With a rules file, "xa":
{"older_than", "branches": [{"data_source", "gtrid", "bqual", "rwshard",
"decision_data_source", "started"}], "error"} lists the XA branches prepared on the
data sources' primaries: rwshard's prepared longer than -xa-age, which
its recovery should have resolved, and every other transaction
manager's; each is a problem. The exit status is the same.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			conn := addReportFlags(fs, "print the report as one JSON document")
			xaAge := fs.Duration("xa-age", time.Minute, "with a rules file: report XA branches prepared longer than this")
			return func(ctx context.Context, e *env, args []string) int {
				cfg, code := conn.args(e, "check", args)
				if cfg == nil {
					return code
				}
				var err error
				groups := map[string]*rwshard.Config{"": cfg}
				var placed map[string][]*placedTable
				var rc *rulesCheck
				if cfg.Sharding.RulesFile != "" {
					// Sharded: prove the rules, then check every data
					// source's group and the data nodes the rules place
					// on it (when the rules name them).
					rc = proveRules(cfg)
					groups = map[string]*rwshard.Config{}
					if rc.rules != nil {
						cfg.Sharding.Rules = rc.rules
						groups, err = shard.DataSourceConfigs(cfg)
						if err != nil {
							e.errorf("check: %s", errText(nil, err))
							return exitProblem
						}
						placed = placements(rc.rules)
					}
				}
				names := make([]string, 0, len(groups))
				for name := range groups {
					names = append(names, name)
				}
				slices.Sort(names)
				status := exitOK
				out := checkJSON{Groups: []checkGroupJSON{}}
				if rc != nil {
					if len(rc.problems) > 0 {
						status = exitProblem
					}
					if *conn.json {
						out.Rules = rc.json()
						out.Problems += len(rc.problems)
					} else {
						rc.print(e.stdout)
					}
				}
				for _, name := range names {
					if name != "" && !*conn.json {
						fmt.Fprintf(e.stdout, "data source %s\n", name)
					}
					begin := time.Now()
					rep := checkCluster(ctx, groups[name], *conn.timeout)
					if placed != nil {
						rep.checkDataNodes(ctx, name, placed[name], *conn.timeout)
					}
					rep.took = time.Since(begin)
					if *conn.json {
						out.Groups = append(out.Groups, rep.jsonReport(name))
						out.Problems += len(rep.problems)
					} else {
						rep.print(e.stdout)
					}
					if len(rep.problems) > 0 {
						status = exitProblem
					}
				}
				if rc != nil && rc.rules != nil {
					xa := checkXA(ctx, cfg, *xaAge)
					if len(xa.Branches) > 0 || xa.Error != "" {
						status = exitProblem
					}
					if *conn.json {
						out.XA = &xa
						out.Problems += len(xa.Branches)
					} else {
						xa.print(e.stdout)
					}
				}
				if *conn.json {
					if code := writeJSON(e, out); code != exitOK {
						return code
					}
				}
				return status
			}
		},
	}
}

// nodeCheck is what check learned about one node.
type nodeCheck struct {
	node     rwshard.Node
	lifetime time.Duration // the node's effective connMaxLifetime

	err    error  // could not connect
	errMsg string // err described for the report, password-free
	denied bool   // MySQL error 1045

	queryErr    error // connected, but a check statement failed
	version     string
	readOnly    bool
	waitTimeout time.Duration
	replica     bool   // has replica status
	ioThread    string // Slave_IO_Running / Replica_IO_Running
	sqlThread   string
	behind      sql.NullInt64 // Seconds_Behind_Master
	ioError     string
	sqlError    string
	bypassesRO  string // the privilege that lets the user write despite read_only
	// noReplicaStatus: the user may not run SHOW REPLICA STATUS (1227):
	// replication threads and Seconds_Behind_Master are not visible.
	noReplicaStatus bool
	// noHeartbeat: the user may not read rwshard.heartbeatTable.
	noHeartbeat bool
	maxStmts    int64 // @@global.max_prepared_stmt_count
	maxConns    int64 // @@global.max_connections
}

func (n *nodeCheck) reached() bool { return n.err == nil }

// connectState is the CONNECT column: ok, denied, unreachable or error.
func (n *nodeCheck) connectState() string {
	switch {
	case n.denied:
		return "denied"
	case !n.reached():
		return "unreachable"
	case n.queryErr != nil:
		return "error"
	}
	return "ok"
}

func (n *nodeCheck) role() string {
	switch {
	case !n.reached() || n.queryErr != nil:
		return "-"
	case !n.readOnly && !n.replica:
		return "primary"
	case n.readOnly && (n.replica || n.noReplicaStatus):
		return "replica"
	case n.replica:
		return "replica, writable"
	default:
		return "read-only, not replicating"
	}
}

// checkReport is the outcome of check over the whole cluster.
type checkReport struct {
	dsn      string
	cfg      *rwshard.Config
	nodes    []*nodeCheck
	problems []string
	warnings []string
	took     time.Duration
	// dataNodes: the data nodes of a sharding rules file's data source;
	// nil otherwise.
	dataNodes *dataNodeCheck
}

// checkCluster connects to every node concurrently and evaluates the
// results.
func checkCluster(ctx context.Context, cfg *rwshard.Config, stmtTimeout time.Duration) *checkReport {
	rep := &checkReport{dsn: redactedDSN(cfg), cfg: cfg}
	connectTimeout := checkConnectTimeout(cfg)
	if cfg.ConnectTimeout <= 0 {
		rep.warnings = append(rep.warnings, fmt.Sprintf(
			"rwshard.connectTimeout=0: connecting is not bounded, a blackholed host hangs callers (check used %s)", connectTimeout))
	}
	rep.nodes = make([]*nodeCheck, len(cfg.Nodes))
	var wg sync.WaitGroup
	for i, n := range cfg.Nodes {
		nc := &nodeCheck{node: n, lifetime: n.ConnMaxLifetime}
		if nc.lifetime == 0 {
			nc.lifetime = cfg.ConnMaxLifetime
		}
		rep.nodes[i] = nc
		wg.Go(func() { nc.probe(ctx, cfg, connectTimeout, stmtTimeout) })
	}
	wg.Wait()
	rep.evaluate()
	return rep
}

// checkConnectTimeout is the bound on connecting to a node of cfg:
// rwshard.connectTimeout, or rwshard's default when that is 0.
func checkConnectTimeout(cfg *rwshard.Config) time.Duration {
	if cfg.ConnectTimeout > 0 {
		return cfg.ConnectTimeout
	}
	return rwshard.NewConfig().ConnectTimeout
}

// dialNode opens one connection to node as cfg's user, to cfg's database,
// with go-sql-driver/mysql directly; the dial and the handshake are
// bounded by connectTimeout. The caller closes the connection, then the
// pool.
func dialNode(ctx context.Context, cfg *rwshard.Config, node rwshard.Node, connectTimeout time.Duration) (*sql.DB, *sql.Conn, error) {
	mc := cfg.Backend.Clone()
	mc.Net, mc.Addr = node.Net, node.Addr
	mc.Timeout = connectTimeout // bounds the dial only
	mc.RejectReadOnly = false
	mc.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	// go-sql-driver's timeout does not bound the handshake: a host that
	// accepts TCP and never answers is bounded by the context alone.
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := db.Conn(cctx)
	cancel()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, conn, nil
}

// probe connects to the node as the configured user and reads its state.
func (n *nodeCheck) probe(ctx context.Context, cfg *rwshard.Config, connectTimeout, stmtTimeout time.Duration) {
	db, conn, err := dialNode(ctx, cfg, n.node, connectTimeout)
	if err != nil {
		n.err = err
		n.errMsg = describeConnectError(cfg, err, connectTimeout, &n.denied)
		return
	}
	defer db.Close()
	defer conn.Close()

	qctx, cancel := context.WithTimeout(ctx, stmtTimeout)
	defer cancel()
	var readOnly, wait int64
	if err := conn.QueryRowContext(qctx, "SELECT @@version, @@global.read_only, @@session.wait_timeout, @@global.max_prepared_stmt_count").
		Scan(&n.version, &readOnly, &wait, &n.maxStmts); err != nil {
		n.queryErr = err
		return
	}
	n.readOnly = readOnly != 0
	n.waitTimeout = time.Duration(wait) * time.Second
	if err := conn.QueryRowContext(qctx, "SELECT @@global.max_connections").Scan(&n.maxConns); err != nil {
		n.queryErr = err
		return
	}
	if err := n.replicaStatus(qctx, conn); isPrivilegeError(err) {
		n.noReplicaStatus = true
	} else if err != nil {
		n.queryErr = fmt.Errorf("replica status: %w", err)
		return
	}
	if t := cfg.HeartbeatTable; t != "" {
		var ts sql.NullString
		err := conn.QueryRowContext(qctx, "SELECT MAX(ts) FROM "+t).Scan(&ts)
		n.noHeartbeat = isPrivilegeError(err)
	}
	// An IO thread passes through Connecting and Preparing on its way to
	// Yes (after a start or a reconnect): give it a moment before calling
	// it not running.
	// Past the statement timeout, the last reading stands.
wait:
	for deadline := time.Now().Add(ioGrace); n.replica && n.ioThread != "Yes" && n.ioThread != "No" &&
		time.Now().Before(deadline); {
		select {
		case <-qctx.Done():
			break wait
		case <-time.After(100 * time.Millisecond):
		}
		if err := n.replicaStatus(qctx, conn); err != nil {
			if qctx.Err() != nil {
				break wait
			}
			n.queryErr = fmt.Errorf("replica status: %w", err)
			return
		}
	}
	n.bypassesRO = readOnlyBypass(qctx, conn)
}

// isPrivilegeError reports a statement the user may not run.
func isPrivilegeError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1227 || me.Number == 1142 || me.Number == 1044)
}

// ioGrace is how long check waits for an IO thread in a transient state
// (Connecting, Preparing) to reach Yes.
const ioGrace = 3 * time.Second

// describeConnectError names a connection failure for the report.
func describeConnectError(cfg *rwshard.Config, err error, timeout time.Duration, denied *bool) string {
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == 1045:
		*denied = true
		return fmt.Sprintf("wrong password: access denied for user %q (MySQL error 1045)", cfg.Backend.User)
	case errors.As(err, &me):
		return "connection refused by the server: " + errText(cfg, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("unreachable: no MySQL handshake within rwshard.connectTimeout=%s", timeout)
	default:
		return "unreachable: " + errText(cfg, err)
	}
}

// replicaStatus reads SHOW REPLICA STATUS, or SHOW SLAVE STATUS on servers
// that do not know it.
func (n *nodeCheck) replicaStatus(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, "SHOW REPLICA STATUS")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1064 {
		rows, err = conn.QueryContext(ctx, "SHOW SLAVE STATUS")
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if !rows.Next() {
		return rows.Err() // not a replica
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	n.replica = true
	for i, c := range cols {
		v := vals[i].String
		switch c {
		case "Slave_IO_Running", "Replica_IO_Running":
			n.ioThread = v
		case "Slave_SQL_Running", "Replica_SQL_Running":
			n.sqlThread = v
		case "Seconds_Behind_Master", "Seconds_Behind_Source":
			if s, err := strconv.ParseInt(v, 10, 64); vals[i].Valid && err == nil {
				n.behind = sql.NullInt64{Int64: s, Valid: true}
			}
		case "Last_IO_Error":
			n.ioError = v
		case "Last_SQL_Error":
			n.sqlError = v
		}
	}
	return rows.Err()
}

// readOnlyBypass returns the global privilege that lets the connected user
// write despite read_only (SUPER, READ_ONLY ADMIN, CONNECTION_ADMIN, ALL
// PRIVILEGES), or "". A failure to read the grants is not reported: this is
// advice, not a check.
func readOnlyBypass(ctx context.Context, conn *sql.Conn) string {
	rows, err := conn.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return ""
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if rows.Scan(&g) != nil {
			return ""
		}
		privs, rest, ok := strings.Cut(strings.TrimPrefix(strings.ToUpper(g), "GRANT "), " ON ")
		if !ok || !strings.HasPrefix(rest, "*.*") {
			continue
		}
		for _, p := range []string{"ALL PRIVILEGES", "SUPER", "READ_ONLY ADMIN", "CONNECTION_ADMIN"} {
			if strings.Contains(privs, p) {
				return p
			}
		}
	}
	return ""
}

// evaluate turns what the nodes said into problems and warnings.
func (r *checkReport) evaluate() {
	cfg := r.cfg
	problem := func(node, format string, args ...any) {
		r.problems = append(r.problems, node+": "+fmt.Sprintf(format, args...))
	}
	warn := func(format string, args ...any) {
		r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
	}
	var writable, bypass, noStatus []string
	for i, n := range r.nodes {
		name := n.node.Name
		if !n.reached() {
			problem(name, "%s", n.errMsg)
			continue
		}
		if n.queryErr != nil {
			problem(name, "check failed: %s", scrub(cfg, n.queryErr.Error()))
			continue
		}
		if !n.readOnly {
			writable = append(writable, name)
		}
		switch {
		case i == 0 && n.readOnly:
			problem(name, "first host is not writable (read_only=ON): the first host must be the primary")
		case i > 0 && !n.readOnly:
			problem(name, "writable (read_only=OFF): only the first host, the primary, should accept writes")
		}
		if i > 0 && !n.replica && !n.noReplicaStatus {
			problem(name, "not replicating: no replica status, its data does not follow the primary")
		}
		if n.noReplicaStatus && i > 0 {
			noStatus = append(noStatus, name)
		}
		if n.noHeartbeat {
			problem(name, "user %q may not read rwshard.heartbeatTable=%s: GRANT SELECT ON it (INSERT, CREATE too with rwshard.heartbeatWrite)", cfg.Backend.User, cfg.HeartbeatTable)
		}
		if n.replica && (n.ioThread != "Yes" || n.sqlThread != "Yes") {
			msg := fmt.Sprintf("replication not running: IO thread %s, SQL thread %s", orDash(n.ioThread), orDash(n.sqlThread))
			if n.ioError != "" {
				msg += "; last IO error: " + scrub(cfg, n.ioError)
			}
			if n.sqlError != "" {
				msg += "; last SQL error: " + scrub(cfg, n.sqlError)
			}
			problem(name, "%s", msg)
		}
		if n.waitTimeout > 0 && (n.lifetime == 0 || n.lifetime >= n.waitTimeout) {
			lt := n.lifetime.String()
			if n.lifetime == 0 {
				lt = "0 (unlimited)"
			}
			problem(name, "rwshard.connMaxLifetime=%s is not below wait_timeout=%s: the server may close pooled connections first", lt, n.waitTimeout)
		}
		if n.replica && n.behind.Valid && cfg.MaxReplicaLag > 0 &&
			time.Duration(n.behind.Int64)*time.Second > cfg.MaxReplicaLag {
			warn("%s: Seconds_Behind_Master=%d is over rwshard.maxReplicaLag=%s: rwshard fences it", name, n.behind.Int64, cfg.MaxReplicaLag)
		}
		if per := int64(cfg.StmtCacheSize) * int64(max(cfg.MaxIdleConns, 1)); n.maxStmts > 0 && per > n.maxStmts/2 {
			warn("%s: rwshard.stmtCacheSize=%d × rwshard.maxIdleConns=%d = %d prepared statements per process, more than half of max_prepared_stmt_count=%d (shared by every client of the server); lower rwshard.stmtCacheSize",
				name, cfg.StmtCacheSize, cfg.MaxIdleConns, per, n.maxStmts)
		}
		if n.maxConns > 0 {
			r.checkBudget(n, warn)
		}
		if i > 0 && n.bypassesRO != "" {
			bypass = append(bypass, name+" ("+n.bypassesRO+")")
		}
	}
	if r.nodes[0].reached() && r.nodes[0].queryErr == nil {
		switch {
		case len(writable) == 0:
			problem("cluster", "no writable node: writes have nowhere to go")
		case len(writable) > 1:
			problem("cluster", "%d writable nodes (%s): split brain, rwshard refuses writes", len(writable), strings.Join(writable, ", "))
		}
	}
	for i, n := range r.nodes {
		if w, ok := cfg.Weights[n.node.Name]; ok && i > 0 && w == 0 {
			warn("rwshard.weights gives %s weight 0: it never serves reads", n.node.Name)
		}
	}
	if len(r.nodes) == 1 {
		warn("one host: every statement goes to it, nothing is split; list the replicas after it in the DSN")
	}
	if len(noStatus) > 0 {
		warn("user %q may not run SHOW REPLICA STATUS on %s (it needs REPLICA MONITOR on MariaDB, REPLICATION CLIENT on MySQL): "+
			"rwshard takes roles from read_only and lag from GTID positions; without it, a replica whose replication stopped "+
			"is fenced only once its lag passes rwshard.maxReplicaLag, and Seconds_Behind_Master is not read",
			cfg.Backend.User, strings.Join(noStatus, ", "))
	}
	if len(bypass) > 0 {
		warn("user %q may write despite read_only on %s: a write that reaches a replica would break its replication; connect as a user without SUPER / READ_ONLY ADMIN",
			cfg.Backend.User, strings.Join(bypass, ", "))
	}
}

// checkBudget warns when the pools of the expected fleet (rwshard.fleetSize
// processes, each with rwshard.maxOpenConns connections to the node) would
// open more connections than the server's max_connections: rwshard then
// caps each process at its share (see docs/connections.md).
func (r *checkReport) checkBudget(n *nodeCheck, warn func(string, ...any)) {
	cfg := r.cfg
	per := int64(cmp.Or(n.node.MaxOpenConns, cfg.MaxOpenConns))
	usable := n.maxConns - n.maxConns/10
	switch {
	case cfg.FleetSize > 0 && (per == 0 || int64(cfg.FleetSize)*per > n.maxConns):
		reserve := int64(0) // each process's probe connections
		if cfg.Health && len(cfg.Nodes) > 1 {
			reserve = 1
			if cfg.HeartbeatWrite {
				reserve = 2
			}
		}
		share := max(usable/int64(cfg.FleetSize)-reserve, 1)
		pools := "unlimited pools"
		if per > 0 {
			pools = fmt.Sprintf("× rwshard.maxOpenConns=%d = %d connections", per, int64(cfg.FleetSize)*per)
		}
		warn("%s: rwshard.fleetSize=%d %s, more than max_connections=%d: each process is capped at its share, %d connections (statements wait for one, up to rwshard.connWait)",
			n.node.Name, cfg.FleetSize, pools, n.maxConns, share)
	case cfg.FleetSize == 0 && per > usable:
		warn("%s: rwshard.maxOpenConns=%d is more than max_connections=%d less a tenth kept free, for one process alone; set rwshard.fleetSize to the number of processes",
			n.node.Name, per, n.maxConns)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// print writes the report: settings, a table of nodes, problems, warnings
// and the verdict.
func (r *checkReport) print(w io.Writer) {
	cfg := r.cfg
	fmt.Fprintf(w, "config: %s\n", r.dsn)
	fmt.Fprintf(w, "user %s, database %s; connectTimeout %s, connMaxLifetime %s, maxReplicaLag %s, balance %s\n\n",
		orDash(cfg.Backend.User), orDash(cfg.Backend.DBName), cfg.ConnectTimeout, cfg.ConnMaxLifetime, cfg.MaxReplicaLag, cfg.Balance)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tCONNECT\tVERSION\tROLE\tREAD_ONLY\tIO_THREAD\tSQL_THREAD\tBEHIND\tWAIT_TIMEOUT")
	for _, n := range r.nodes {
		connect, version, ro, io, sqlT, behind, wait := n.connectState(), "-", "-", "-", "-", "-", "-"
		if n.reached() && n.version != "" {
			version, wait = n.version, n.waitTimeout.String()
			ro = "OFF"
			if n.readOnly {
				ro = "ON"
			}
		}
		if n.replica {
			io, sqlT, behind = orDash(n.ioThread), orDash(n.sqlThread), "NULL"
			if n.behind.Valid {
				behind = strconv.FormatInt(n.behind.Int64, 10) + "s"
			}
		}
		addr := n.node.Addr
		if n.node.Net != "tcp" {
			addr = n.node.Net + "(" + addr + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.node.Name, addr,
			connect, version, n.role(), ro, io, sqlT, behind, wait)
	}
	tw.Flush()
	if r.dataNodes != nil {
		fmt.Fprintf(w, "\n%s\n", r.dataNodes.summary())
	}
	if len(r.problems) > 0 {
		fmt.Fprintf(w, "\nproblems:\n")
		for _, p := range r.problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	if len(r.warnings) > 0 {
		fmt.Fprintf(w, "\nwarnings:\n")
		for _, p := range r.warnings {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	fmt.Fprintln(w)
	took := r.took.Round(time.Millisecond)
	checked := plural(len(r.nodes), "node")
	if d := r.dataNodes; d != nil && d.checked && len(d.placed) > 0 {
		checked += " and " + plural(len(d.placed), "data node")
	}
	if len(r.problems) == 0 {
		fmt.Fprintf(w, "ok: %s checked in %s, no problems", checked, took)
		if len(r.warnings) > 0 {
			fmt.Fprintf(w, ", %s", plural(len(r.warnings), "warning"))
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "%s found (%s checked in %s)\n", plural(len(r.problems), "problem"), checked, took)
}

// xaReport is check's report of XA branches left prepared.
type xaReport struct {
	OlderThan string         `json:"older_than"`
	Branches  []xaBranchJSON `json:"branches"`
	Error     string         `json:"error,omitempty"`
}

type xaBranchJSON struct {
	DataSource string    `json:"data_source"`
	GTRID      string    `json:"gtrid"`
	BQual      string    `json:"bqual"`
	Rwshard    bool      `json:"rwshard"`
	Decision   string    `json:"decision_data_source,omitempty"`
	Started    time.Time `json:"started,omitempty"`
}

// checkXA lists the XA branches prepared longer than olderThan on the
// primaries of a sharded configuration. A branch prepared that long is
// a problem: rwshard's recovery resolves its own within two
// xaRecoverInterval while a connector with XA runs, and nothing resolves
// another manager's but an operator.
func checkXA(ctx context.Context, cfg *rwshard.Config, olderThan time.Duration) xaReport {
	rep := xaReport{OlderThan: olderThan.String(), Branches: []xaBranchJSON{}}
	branches, err := shard.PreparedBranches(ctx, cfg, olderThan)
	if err != nil {
		rep.Error = errText(cfg, err)
	}
	for _, b := range branches {
		rep.Branches = append(rep.Branches, xaBranchJSON{DataSource: b.DataSource, GTRID: b.GTRID, BQual: b.BQual,
			Rwshard: b.Rwshard, Decision: b.Decision, Started: b.Started})
	}
	return rep
}

func (r xaReport) print(w io.Writer) {
	switch {
	case r.Error != "":
		fmt.Fprintf(w, "xa: could not list prepared branches: %s\n", r.Error)
	case len(r.Branches) == 0:
		fmt.Fprintf(w, "xa: no branch prepared longer than %s\n", r.OlderThan)
		return
	}
	for _, b := range r.Branches {
		if !b.Rwshard {
			// Its age is unknown: another manager's id says nothing of it.
			fmt.Fprintf(w, "xa: %s: branch %q/%q prepared, another transaction manager's: resolve it by hand (XA COMMIT or XA ROLLBACK)\n",
				b.DataSource, b.GTRID, b.BQual)
			continue
		}
		fmt.Fprintf(w, "xa: %s: branch %q/%q prepared longer than %s, rwshard's: recovery resolves it while a connector with rwshard.xa runs (its decision row is on %s)\n",
			b.DataSource, b.GTRID, b.BQual, r.OlderThan, b.Decision)
	}
}
