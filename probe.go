package rwshard

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/internal/monitor"
)

// The probe of one node: one connection, two statements (three with a
// heartbeat table), bounded by the probe timeout. On a node rwshard opened
// itself the statements travel together as one multi-statement query on a
// connection of the node's own (node.probeDB), held from one probe to the
// next (heldProbe): one round trip per probe, and a probe never waits for,
// or takes, a connection the application needs. Over *sql.DB handles the
// caller opened (OpenDB) they run one by one on a connection of that pool,
// checked out for each probe. Package monitor owns the schedule; this
// is the I/O it asks for.

// flavor of a server, learned on the first probe.
const (
	flavorUnknown int32 = iota
	flavorMariaDB
	flavorMySQL
)

// heartbeatLayout is pt-heartbeat's ts format.
const heartbeatLayout = "2006-01-02T15:04:05.999999"

// The probe's statements, in the order of their result sets.
const (
	probePositions = iota // @@read_only and the GTID positions
	probeReplica          // SHOW REPLICA STATUS
	probeHeartbeat        // the heartbeat table, when configured
)

func (cl *cluster) probe(ctx context.Context, i int) (monitor.Reading, error) {
	r, err := cl.probeNode(ctx, i)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		// The probe's own timeout: said so, so that a statement whose
		// error carries it is not taken for its caller's deadline.
		err = fmt.Errorf("no answer within rwshard.probeTimeout (%s)", cl.cfg.ProbeTimeout)
	}
	if err == nil && cl.galera {
		n := cl.nodes[i]
		pos := r.Position
		n.settled.Store(n.seen.Swap(&pos))
	}
	if err == nil && !r.Replica && !r.ReadOnly && (!cl.galera || i == 0) {
		// Every node of a Galera cluster is writable: its first host names
		// the cluster's scope, whichever node writes.
		cl.join(cl.nodes[i])
	}
	return r, err
}

// probeNode is probe's work.
func (cl *cluster) probeNode(ctx context.Context, i int) (monitor.Reading, error) {
	n := cl.nodes[i]
	if n.probeDB == nil {
		conn, err := n.db.Conn(ctx)
		if err != nil {
			return monitor.Reading{}, err
		}
		defer conn.Close()
		return cl.probeOn(ctx, conn, n, false)
	}
	h := &n.held
	conn, reused, err := h.get(ctx, n.probeDB)
	if err != nil {
		return monitor.Reading{}, err
	}
	// The probe timeout closes the socket (as a node out of rotation has
	// its statements' sockets closed) instead of being watched by
	// database/sql and go-sql-driver, each of which otherwise hands the
	// context to a goroutine of its own for every query: wake-ups of other
	// goroutines at each probe, on an idle service most of its cost. On a
	// network rwshard does not dial (no socket known) the context does it.
	qctx, stop := ctx, func() bool { return true }
	if h.bc.net != nil {
		qctx, stop = context.WithoutCancel(ctx), context.AfterFunc(ctx, h.bc.interrupt)
	}
	r, err := cl.probeOn(qctx, conn, n, true)
	interrupted := !stop() // the context ended during the probe: its socket is closed
	if interrupted || err != nil {
		h.release()
	}
	switch {
	case interrupted && err != nil:
		err = ctx.Err()
	case reused && err != nil && judge(ctx, err).connectionFailed():
		// The held connection broke after its check found it open (the
		// server's or a middlebox's close still on its way): the node did
		// not fail. Once more, on a new connection.
		return cl.probeNode(ctx, i)
	}
	return r, err
}

// probeOn is the probe on conn.
func (cl *cluster) probeOn(ctx context.Context, conn *sql.Conn, n *node, multi bool) (monitor.Reading, error) {
	if n.flavor.Load() == flavorUnknown {
		var version, host string
		var port, serverID int64
		if err := conn.QueryRowContext(ctx, "SELECT @@version, @@hostname, @@port, @@server_id").Scan(&version, &host, &port, &serverID); err != nil {
			return monitor.Reading{}, err
		}
		f := flavorMySQL
		if strings.Contains(strings.ToLower(version), "mariadb") {
			f = flavorMariaDB
		}
		id := fmt.Sprintf("%s %s:%d/%d", cl.reachedAt(n), host, port, serverID)
		n.identity.Store(&id)
		n.flavor.Store(f)
	}
	for {
		r, err := cl.probeOnce(ctx, conn, n, multi)
		if serverErrno(err) == 1064 && !n.oldShow.Load() {
			// A server older than SHOW REPLICA STATUS: the statements
			// before it ran, the rest did not. Again with SHOW SLAVE STATUS.
			n.oldShow.Store(true)
			continue
		}
		return r, err
	}
}

// probeOnce runs the probe's statements on conn (in one round trip when
// multi) and reads their results into a Reading.
func (cl *cluster) probeOnce(ctx context.Context, conn *sql.Conn, n *node, multi bool) (monitor.Reading, error) {
	var r monitor.Reading
	var binlogPos, appliedPos sql.NullString
	stmts := make([]string, 2, 3)
	stmts[probePositions] = "SELECT @@read_only, @@gtid_binlog_pos, @@gtid_slave_pos"
	if n.flavor.Load() == flavorMySQL {
		stmts[probePositions] = "SELECT @@read_only, @@global.gtid_executed, @@global.gtid_executed"
	}
	var waitTimeout, maxConns sql.NullInt64
	positions := []any{&r.ReadOnly, &binlogPos, &appliedPos}
	if n.conns != nil {
		// The node's own pool closes idle connections before the server
		// does (connPool.idleLimit), and keeps within its share of the
		// server's connection limit (connbudget.go): it learns both here,
		// at no round trip of its own. The limit's use
		// (Threads_connected), which costs the server a sum over every
		// connection's counters, is read by the pool on a connection it
		// opens. Over OpenDB's handles the caller's pools have neither.
		stmts[probePositions] += ", @@global.wait_timeout, @@max_connections"
		positions = append(positions, &waitTimeout, &maxConns)
	}
	stmts[probeReplica] = "SHOW REPLICA STATUS"
	if n.oldShow.Load() {
		stmts[probeReplica] = "SHOW SLAVE STATUS"
	}
	if n.noReplicaStatus.Load() {
		stmts[probeReplica] = "SELECT NULL LIMIT 0" // an empty result set in its place
	}
	galera := cl.cfg.Topology == TopologyGalera
	if galera {
		stmts[probeReplica] = probeWsrep
	}
	if t := cl.cfg.HeartbeatTable; t != "" {
		stmts = append(stmts, "SELECT MAX(ts) FROM "+t)
	}
	failed, err := queryEach(ctx, conn, multi, stmts, func(i int, rows *sql.Rows) error {
		switch i {
		case probePositions:
			return scanOne(rows, positions...)
		case probeReplica:
			if galera {
				return readWsrep(rows, &r, n)
			}
			return readReplicaStatus(rows, &r)
		default:
			var ts sql.NullString
			if err := scanOne(rows, &ts); err != nil {
				return err
			}
			if ts.Valid {
				r.Heartbeat, _ = time.ParseInLocation(heartbeatLayout, ts.String, time.UTC)
			}
			return nil
		}
	})
	switch {
	case err == nil:
	case failed == probeReplica && isPrivilegeError(err) && !galera:
		// Without REPLICA MONITOR (or REPLICATION CLIENT, SUPER) the
		// replication threads are not visible: the role comes from
		// read_only, the lag from the GTID samples. Not a node down.
		n.noReplicaStatus.Store(true)
		return cl.probeOnce(ctx, conn, n, multi)
	case failed == probeHeartbeat && (isMissingTable(err) || isPrivilegeError(err)):
		// no heartbeat yet, or none readable: the GTID samples still speak
	default:
		return r, err
	}
	if waitTimeout.Valid && waitTimeout.Int64 > 0 {
		n.waitTimeout.Store(int64(time.Duration(waitTimeout.Int64) * time.Second))
	}
	if n.conns != nil && maxConns.Int64 > 0 {
		n.conns.observeMax(int(maxConns.Int64))
	}
	if n.noReplicaStatus.Load() && r.ReadOnly {
		// A read-only node without visible replica status: taken as a
		// replica whose threads are unknown (running, as far as rwshard
		// can tell: its lag says the rest).
		r.Replica, r.IORunning, r.SQLRunning, r.SecondsBehind = true, true, true, -1
	}
	pos := binlogPos.String
	if r.Replica && appliedPos.String != "" {
		pos = appliedPos.String
	}
	r.Position, err = monitor.ParseGTID(pos)
	r.GTIDs = n.flavor.Load() == flavorMariaDB // MariaDB keeps GTID positions always
	return r, err
}

// probeWsrep reads a Galera node's state in one row, in the probe's
// round trip: the wsrep variables, then the status variables
// (information_schema.GLOBAL_STATUS, readable without privileges).
const probeWsrep = "SELECT @@wsrep_desync, @@wsrep_reject_queries, @@wsrep_gtid_domain_id," +
	" MAX(IF(VARIABLE_NAME = 'WSREP_READY', VARIABLE_VALUE, NULL))," +
	" MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_STATE', VARIABLE_VALUE, NULL))," +
	" MAX(IF(VARIABLE_NAME = 'WSREP_CLUSTER_STATUS', VARIABLE_VALUE, NULL))," +
	" MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_INDEX', VARIABLE_VALUE, NULL))," +
	" MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_RECV_QUEUE', VARIABLE_VALUE, NULL))" +
	" FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_LOCAL_STATE'," +
	" 'WSREP_CLUSTER_STATUS', 'WSREP_LOCAL_INDEX', 'WSREP_LOCAL_RECV_QUEUE')"

// readWsrep reads probeWsrep's row into r, and the node's GTID domain of
// replicated writes into n. A node without the wsrep status (not a
// Galera node) reads as not ready.
func readWsrep(rows *sql.Rows, r *monitor.Reading, n *node) error {
	var desync sql.NullBool
	var reject, ready, status sql.NullString
	var domain, state, index, queue sql.NullInt64
	if err := scanOne(rows, &desync, &reject, &domain, &ready, &state, &status, &index, &queue); err != nil {
		return err
	}
	r.Galera = &monitor.Wsrep{Ready: ready.String == "ON", LocalState: int(state.Int64), Desync: desync.Bool,
		RejectQueries: reject.String, ClusterStatus: cmp.Or(status.String, "Disconnected"),
		LocalIndex: int(index.Int64), RecvQueue: queue.Int64}
	n.wsrepDomain.Store(uint32(domain.Int64))
	return nil
}

// queryEach runs stmts on conn, as one multi-statement query when multi
// (the connection must allow it) or one by one, and hands each result set
// to read in order. It stops at the first error and returns it with the
// index of the statement it belongs to.
func queryEach(ctx context.Context, conn *sql.Conn, multi bool, stmts []string, read func(int, *sql.Rows) error) (int, error) {
	if !multi {
		for i, q := range stmts {
			rows, err := conn.QueryContext(ctx, q)
			if err != nil {
				return i, err
			}
			err = read(i, rows)
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return i, err
			}
		}
		return len(stmts), nil
	}
	rows, err := conn.QueryContext(ctx, strings.Join(stmts, "; "))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for i := range stmts {
		if i > 0 && !rows.NextResultSet() {
			if err := rows.Err(); err != nil {
				return i, err
			}
			return i, fmt.Errorf("%d result sets for %d statements", i, len(stmts))
		}
		if err := read(i, rows); err != nil {
			return i, err
		}
	}
	return len(stmts), nil
}

// scanOne scans the first row of the current result set; a result set
// without rows leaves dest as it is.
func scanOne(rows *sql.Rows, dest ...any) error {
	if !rows.Next() {
		return rows.Err()
	}
	return rows.Scan(dest...)
}

// readReplicaStatus reads the current result set, SHOW REPLICA STATUS
// (or SHOW SLAVE STATUS), into r: no row, not a replica.
func readReplicaStatus(rows *sql.Rows, r *monitor.Reading) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if !rows.Next() {
		return rows.Err()
	}
	// RawBytes: the row's sixty-odd columns are read without a string
	// each; the few used are looked at before the next call on rows.
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	r.Replica = true
	r.SecondsBehind = -1
	for i, c := range cols {
		switch c {
		case "Slave_IO_Running", "Replica_IO_Running":
			// Yes, No, or a state on the way to Yes (Connecting, and
			// Preparing on MariaDB): only No is stopped.
			r.IORunning = string(vals[i]) == "Yes"
			r.IOConnecting = string(vals[i]) != "Yes" && string(vals[i]) != "No"
		case "Slave_SQL_Running", "Replica_SQL_Running":
			r.SQLRunning = string(vals[i]) == "Yes"
		case "Seconds_Behind_Master", "Seconds_Behind_Source":
			if vals[i] != nil { // NULL: unknown
				if n, err := strconv.ParseInt(string(vals[i]), 10, 64); err == nil {
					r.SecondsBehind = n
				}
			}
		}
	}
	return rows.Err()
}

// isPrivilegeError reports a statement the user may not run: 1227
// ER_SPECIFIC_ACCESS_DENIED_ERROR (SHOW REPLICA STATUS without REPLICA
// MONITOR), 1142 ER_TABLEACCESS_DENIED_ERROR, 1044 ER_DBACCESS_DENIED_ERROR.
func isPrivilegeError(err error) bool {
	n := serverErrno(err)
	return n == 1227 || n == 1142 || n == 1044
}

func isMissingTable(err error) bool {
	n := serverErrno(err)
	return n == 1146 || n == 1049
}

// beat writes the heartbeat row on the primary, pt-heartbeat style (UTC),
// creating pt-heartbeat's table if it does not exist.
func (cl *cluster) beat(ctx context.Context) error {
	p := cl.primary()
	write := "REPLACE INTO " + cl.cfg.HeartbeatTable +
		" (ts, server_id) VALUES (DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%f'), @@server_id)"
	db := p.statementDB()
	_, err := db.ExecContext(ctx, write)
	if isMissingTable(err) {
		if _, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+cl.cfg.HeartbeatTable+
			" (ts VARCHAR(26) NOT NULL, server_id INT UNSIGNED NOT NULL PRIMARY KEY,"+
			" file VARCHAR(255) DEFAULT NULL, position BIGINT UNSIGNED DEFAULT NULL,"+
			" relay_master_log_file VARCHAR(255) DEFAULT NULL, exec_master_log_pos BIGINT UNSIGNED DEFAULT NULL)"); err == nil {
			_, err = db.ExecContext(ctx, write)
		}
	}
	return err
}

// reachedAt names how this process reaches n: its address, or the handle
// given to OpenDB. Part of n's identity, since servers of two clusters
// can name themselves alike (the same container image and server_id in
// two namespaces); the same address in one process is the same server.
func (cl *cluster) reachedAt(n *node) string {
	if n.db != nil {
		return fmt.Sprintf("handle(%p)", n.db)
	}
	nc := cl.cfg.Nodes[n.index]
	return sameServer(nc.Net, nc.Addr)
}

// nodeProbeState is per-node probe memory.
type nodeProbeState struct {
	flavor atomic.Int32
	// identity is how this process reaches the server (reachedAt) and
	// the server's own name for itself (@@hostname:@@port/@@server_id),
	// read with its flavor: the key of its cluster's read-your-writes
	// scope in this process (scopes).
	identity        atomic.Pointer[string]
	oldShow         atomic.Bool   // the server does not know SHOW REPLICA STATUS
	noReplicaStatus atomic.Bool   // the user may not run it (see probeOnce)
	wsrepDomain     atomic.Uint32 // Galera: @@wsrep_gtid_domain_id
	held            heldProbe     // the probes' connection, on nodes rwshard opened
	// waitTimeout is the server's @@global.wait_timeout as the last probe
	// read it (0: not yet, or not probed): what a new session gets, and so
	// how long the node's pool may keep a new connection idle.
	waitTimeout atomic.Int64
}

// heldProbe is the connection of node.probeDB that a node's probes run
// on, kept from one probe to the next rather than checked out of the pool
// and returned for each. Only the node's probe loop uses it, and closeNodes
// once the monitor has stopped.
type heldProbe struct {
	conn     *sql.Conn
	bc       *backendConn // conn's driver connection, for its socket (interrupt)
	taken    time.Time
	lifetime time.Duration // the node's ConnMaxLifetime; 0: none
}

// get returns the held connection (reused), or a connection of db. The
// held one is checked first as database/sql checks a connection it takes
// from its pool (go-sql-driver's liveness check, a read that must find
// nothing), so a connection the server closed since the last probe is
// replaced, not reported as the node failing (a close the check could not
// see yet fails the probe's statement: probe runs it again); one older
// than the node's ConnMaxLifetime is given back and replaced too.
func (h *heldProbe) get(ctx context.Context, db *sql.DB) (_ *sql.Conn, reused bool, _ error) {
	if h.conn != nil {
		if h.lifetime > 0 && time.Since(h.taken) >= h.lifetime {
			h.release()
		} else if err := h.conn.Raw(func(dc any) error { return resetConn(ctx, dc.(driver.Conn)) }); err != nil {
			h.release()
		} else {
			return h.conn, true, nil
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var bc *backendConn
	if err := conn.Raw(func(dc any) error {
		bc, _ = dc.(*backendConn)
		return nil
	}); err != nil || bc == nil {
		conn.Close()
		return nil, false, cmp.Or(err, errors.New("probe connection of an unknown driver"))
	}
	h.conn, h.bc, h.taken = conn, bc, time.Now()
	return conn, false, nil
}

// release gives the held connection back to its pool, which keeps it if
// it is still valid (a server error leaves it so; a closed socket not).
func (h *heldProbe) release() {
	if h.conn != nil {
		h.conn.Close()
		h.conn, h.bc = nil, nil
	}
}
