package tpcc_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// Where did the writes go? The servers' own records, read through the
// lab's root connections, before and after every run:
//
//   - Com_insert/Com_update/Com_delete (SHOW GLOBAL STATUS). They cannot
//     tell: MariaDB's replication SQL thread bumps them on a replica for
//     every row event it applies (binlog_format=ROW), and a client's
//     write that a read-only replica refuses (error 1290) bumps none of
//     them. Reported, with the measurement that shows it.
//   - INFORMATION_SCHEMA.USER_STATISTICS (userstat=ON, set by the
//     harness): rows inserted, updated and deleted, update commands and
//     commits per user. Replication is no user: on a replica, the
//     application user's figures count only what clients did there.
//   - @@gtid_binlog_state of each replica: a transaction committed on a
//     replica itself would be binlogged there under the replica's server
//     id.
//   - rwshard's Stats: statements per node and server errors per node, so
//     that a write sent to a replica and refused there (which no server
//     counter records) shows as well.

// writeCounters are the statement counters of writes.
var writeCounters = []string{
	"Com_insert", "Com_insert_select", "Com_replace", "Com_replace_select",
	"Com_update", "Com_update_multi", "Com_delete", "Com_delete_multi",
}

// otherCounters are reported alongside: transactions and reads.
var otherCounters = []string{"Com_begin", "Com_commit", "Com_rollback", "Com_select", "Com_stmt_execute", "Com_stmt_prepare", "Com_stmt_close", "Com_stmt_reset", "Connections", "Questions"}

// appWrites are the USER_STATISTICS columns of writes; appColumns adds
// the reads and other commands, reported.
var (
	appWrites  = []string{"ROWS_INSERTED", "ROWS_UPDATED", "ROWS_DELETED", "UPDATE_COMMANDS", "COMMIT_TRANSACTIONS"}
	appColumns = append(append([]string{}, appWrites...), "SELECT_COMMANDS", "OTHER_COMMANDS")
)

// enableUserstat turns on MariaDB's per-user statistics on every node.
func enableUserstat(t testing.TB, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range l.Nodes() {
		if err := n.Exec(ctx, "SET GLOBAL userstat = ON"); err != nil {
			t.Fatal(err)
		}
	}
}

// appStats reads the application user's USER_STATISTICS on n (zeros
// before its first statement there).
func appStats(t testing.TB, n *lab.Node) map[string]int64 {
	t.Helper()
	vals := make([]int64, len(appColumns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	err := n.Admin().QueryRow("SELECT "+strings.Join(appColumns, ", ")+
		" FROM information_schema.USER_STATISTICS WHERE USER = ?", appUser).Scan(ptrs...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("%s: USER_STATISTICS: %v", n.Name, err)
	}
	m := map[string]int64{}
	for i, c := range appColumns {
		m["app."+c] = vals[i]
	}
	return m
}

// snapshot is every node's counters (status, the application user's
// statistics, and the server process's CPU time under serverCPUKey, in
// µs) in one map, in l.Nodes() order.
func snapshot(t testing.TB, l *lab.Lab) []map[string]int64 {
	t.Helper()
	var out []map[string]int64
	for _, n := range l.Nodes() {
		m := labtest.Status(t, n, append(append([]string{}, writeCounters...), otherCounters...)...)
		for k, v := range appStats(t, n) {
			m[k] = v
		}
		m[serverCPUKey] = serverCPU(t, n).Microseconds()
		out = append(out, m)
	}
	return out
}

// writeAudit sums each side's counter deltas over its runs, for the
// primary and for both replicas together.
type writeAudit struct {
	primary, replicas map[string]map[string]int64
}

func newWriteAudit() *writeAudit {
	return &writeAudit{
		primary:  map[string]map[string]int64{direct: {}, viaRW: {}},
		replicas: map[string]map[string]int64{direct: {}, viaRW: {}},
	}
}

// add records one run of side between two snapshots.
func (a *writeAudit) add(l *lab.Lab, side string, before, after []map[string]int64) {
	for i, n := range l.Nodes() {
		d := counterDelta(before[i], after[i])
		if n == l.Primary() {
			addCounters(a.primary[side], d)
		} else {
			addCounters(a.replicas[side], d)
		}
	}
}

// appKeys prefixes USER_STATISTICS column names as snapshot stores them.
func appKeys(cols []string) []string {
	var out []string
	for _, c := range cols {
		out = append(out, "app."+c)
	}
	return out
}

// report logs the counters and fails the test when a client's write
// reached a replica during the rwshard runs.
func (a *writeAudit) report(t *testing.T, l *lab.Lab) {
	t.Helper()
	com := append(append([]string{}, writeCounters...), otherCounters...)
	for _, side := range []string{direct, viaRW} {
		t.Logf("%-7s runs, primary:  %s;%s", side, formatCounters(a.primary[side], com), formatCounters(a.primary[side], appKeys(appColumns)))
		t.Logf("%-7s runs, replicas: %s;%s", side, formatCounters(a.replicas[side], com), formatCounters(a.replicas[side], appKeys(appColumns)))
	}
	// Com_*: replication's share, measured where only replication reaches
	// the replicas (the direct runs).
	repl, prim := sumOf(a.replicas[direct], writeCounters), sumOf(a.primary[direct], writeCounters)
	if repl != 0 {
		t.Logf("Com_* finding: over the direct runs (no client statement on a replica) replication raised the replicas' write counters by %d (the primary's rose by %d): they count applied row events, so they cannot show a client's write", repl, prim)
	} else {
		t.Logf("Com_* finding: replication left the replicas' write counters alone (primary +%d)", prim)
	}
	if sumOf(a.primary[direct], appKeys(appWrites)) == 0 || sumOf(a.primary[viaRW], appKeys(appWrites)) == 0 {
		t.Errorf("USER_STATISTICS shows no write on the primary for one side: the statistics are not counting")
	}
	for _, side := range []string{direct, viaRW} {
		if got := sumOf(a.replicas[side], appKeys(appWrites)); got != 0 {
			t.Errorf("%s runs: the application user wrote on the replicas:%s", side, formatCounters(a.replicas[side], appKeys(appWrites)))
		}
	}
	t.Logf("USER_STATISTICS: the application user's writes on the replicas over the rwshard runs:%s (primary:%s)",
		formatCounters(a.replicas[viaRW], appKeys(appWrites)), formatCounters(a.primary[viaRW], appKeys(appWrites)))
	checkGTIDOrigins(t, l)
	refusedWriteControl(t, l)
}

// checkGTIDOrigins fails the test if a replica's binlog holds a
// transaction it did not receive from the primary.
func checkGTIDOrigins(t *testing.T, l *lab.Lab) {
	t.Helper()
	for _, r := range l.Replicas() {
		var state string
		if err := r.Admin().QueryRow("SELECT @@gtid_binlog_state").Scan(&state); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		var foreign []string
		for _, g := range strings.Split(state, ",") {
			parts := strings.Split(strings.TrimSpace(g), "-")
			if len(parts) != 3 {
				continue
			}
			if id, _ := strconv.Atoi(parts[1]); id != l.Primary().ServerID {
				foreign = append(foreign, g)
			}
		}
		if len(foreign) > 0 {
			t.Errorf("%s binlogged transactions of its own: %v (gtid_binlog_state %s)", r.Name, foreign, state)
		} else {
			t.Logf("%s gtid_binlog_state %s: every transaction came from the primary (server id %d)", r.Name, state, l.Primary().ServerID)
		}
	}
}

// refusedWriteControl sends one INSERT to a replica (refused: read-only)
// and reports which counters saw it: the reason the rwshard side is also
// checked through rwshard's own per-node statistics.
func refusedWriteControl(t *testing.T, l *lab.Lab) {
	t.Helper()
	r := l.Replicas()[0]
	before := snapshot(t, l)
	_, err := nodeDB(t, r, "").Exec("INSERT INTO refused_write_control (id) VALUES (1)")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 {
		t.Errorf("INSERT on %s: %v, want error 1290 (read-only)", r.Name, err)
	}
	after := snapshot(t, l)
	i := 1 + indexOf(l.Replicas(), r)
	d := counterDelta(before[i], after[i])
	t.Logf("control: one INSERT sent to %s (%v): write counters +%d, application user's USER_STATISTICS writes +%d, Questions +%d (the harness's own SHOW STATUS and SELECT included)",
		r.Name, errText(err), sumOf(d, writeCounters), sumOf(d, appKeys(appWrites)), d["Questions"])
}

func indexOf(ns []*lab.Node, n *lab.Node) int {
	for i, x := range ns {
		if x == n {
			return i
		}
	}
	return -1
}

func errText(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("refused with error %d", me.Number)
	}
	return fmt.Sprint(err)
}
