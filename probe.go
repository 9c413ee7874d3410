package rwshard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/health"
)

// The probe of one node: one connection, two statements (three with a
// heartbeat table), bounded by the probe timeout. The health package owns
// the schedule; this is the I/O it asks for.

// flavor of a server, learned on the first probe.
const (
	flavorUnknown int32 = iota
	flavorMariaDB
	flavorMySQL
)

// heartbeatLayout is pt-heartbeat's ts format.
const heartbeatLayout = "2006-01-02T15:04:05.999999"

func (cl *cluster) probe(ctx context.Context, i int) (health.Reading, error) {
	n := cl.nodes[i]
	var r health.Reading
	conn, err := n.db.Conn(ctx)
	if err != nil {
		return r, err
	}
	defer conn.Close()
	if n.flavor.Load() == flavorUnknown {
		var version string
		if err := conn.QueryRowContext(ctx, "SELECT @@version").Scan(&version); err != nil {
			return r, err
		}
		f := flavorMySQL
		if strings.Contains(strings.ToLower(version), "mariadb") {
			f = flavorMariaDB
		}
		n.flavor.Store(f)
	}
	q := "SELECT @@read_only, @@gtid_binlog_pos, @@gtid_slave_pos"
	if n.flavor.Load() == flavorMySQL {
		q = "SELECT @@read_only, @@global.gtid_executed, @@global.gtid_executed"
	}
	var binlogPos, appliedPos sql.NullString
	if err := conn.QueryRowContext(ctx, q).Scan(&r.ReadOnly, &binlogPos, &appliedPos); err != nil {
		return r, err
	}
	if err := replicaStatus(ctx, conn, &r, n); err != nil {
		return r, err
	}
	pos := binlogPos.String
	if r.Replica {
		pos = appliedPos.String
	}
	if r.Position, err = health.ParseGTID(pos); err != nil {
		return r, err
	}
	if t := cl.cfg.HeartbeatTable; t != "" {
		var ts sql.NullString
		err := conn.QueryRowContext(ctx, "SELECT MAX(ts) FROM "+t).Scan(&ts)
		if err != nil && !isMissingTable(err) {
			return r, err
		}
		if ts.Valid {
			r.Heartbeat, _ = time.ParseInLocation(heartbeatLayout, ts.String, time.UTC)
		}
	}
	return r, nil
}

// replicaStatus reads SHOW REPLICA STATUS (SHOW SLAVE STATUS on servers
// that do not know it) into r.
func replicaStatus(ctx context.Context, conn *sql.Conn, r *health.Reading, n *node) error {
	q := "SHOW REPLICA STATUS"
	if n.oldShow.Load() {
		q = "SHOW SLAVE STATUS"
	}
	rows, err := conn.QueryContext(ctx, q)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1064 && !n.oldShow.Load() {
		n.oldShow.Store(true)
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
		return rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
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
			r.IORunning = vals[i].String == "Yes"
			r.IOConnecting = vals[i].String != "Yes" && vals[i].String != "No"
		case "Slave_SQL_Running", "Replica_SQL_Running":
			r.SQLRunning = vals[i].String == "Yes"
		case "Seconds_Behind_Master", "Seconds_Behind_Source":
			if vals[i].Valid {
				fmt.Sscan(vals[i].String, &r.SecondsBehind)
			}
		}
	}
	return rows.Err()
}

func isMissingTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1146 || me.Number == 1049)
}

// beat writes the heartbeat row on the primary, pt-heartbeat style (UTC),
// creating pt-heartbeat's table if it does not exist.
func (cl *cluster) beat(ctx context.Context) error {
	p := cl.primary()
	write := "REPLACE INTO " + cl.cfg.HeartbeatTable +
		" (ts, server_id) VALUES (DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%f'), @@server_id)"
	_, err := p.db.ExecContext(ctx, write)
	if isMissingTable(err) {
		if _, err = p.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+cl.cfg.HeartbeatTable+
			" (ts VARCHAR(26) NOT NULL, server_id INT UNSIGNED NOT NULL PRIMARY KEY,"+
			" file VARCHAR(255) DEFAULT NULL, position BIGINT UNSIGNED DEFAULT NULL,"+
			" relay_master_log_file VARCHAR(255) DEFAULT NULL, exec_master_log_pos BIGINT UNSIGNED DEFAULT NULL)"); err == nil {
			_, err = p.db.ExecContext(ctx, write)
		}
	}
	return err
}

// nodeProbeState is per-node probe memory.
type nodeProbeState struct {
	flavor  atomic.Int32
	oldShow atomic.Bool // the server does not know SHOW REPLICA STATUS
}
