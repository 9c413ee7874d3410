package shard

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
)

// The commit decision of an XA transaction is a row of rwshard_xa_decision
// on its decision data source, inserted inside that data source's branch:
// it exists, for every other session, exactly when that branch has
// committed. The table lives in the data source's own database, created on
// first use (the application user's GRANT ALL ON app.* allows it); its
// rows are deleted once every branch of their transaction has committed.

const xaDecisionTable = "rwshard_xa_decision"

// xaDecisionDDL creates the table. created is the server's clock, for the
// sweep of rows a crash left behind (xaRecovery.pass).
const xaDecisionDDL = "CREATE TABLE IF NOT EXISTS " + xaDecisionTable + ` (
  gtrid VARBINARY(64) NOT NULL PRIMARY KEY,
  created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY (created)
) ENGINE=InnoDB COMMENT='rwshard: XA commit decisions (docs/sharding.md#transactions)'`

// xaFlushAt is how many finished decisions of one data source a
// connector keeps before a commit deletes them: one DELETE per so many
// transactions, off the hot path of the others.
const xaFlushAt = 64

// xaRecord inserts the decision row inside data source d's branch,
// creating the table (on another connection: DDL would end the branch)
// when it does not exist yet.
func (sc *conn) xaRecord(ctx context.Context, d string) error {
	s := sc.subs[d]
	insert := "INSERT INTO " + xaDecisionTable + " (gtrid) VALUES ('" + gtridOf(sc.xid, d) + "')"
	_, err := s.exec(ctx, insert, nil, false)
	if !noSuchTable(err) {
		return err
	}
	conn, err := s.dc.Connect(ctx)
	if err != nil {
		return err
	}
	_, err = execOn(ctx, conn, xaDecisionDDL)
	conn.Close()
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, insert, nil, false)
	return err
}

// xaDurableStmt is a committed write to a row of the decision table that
// decides nothing ("rwshard:durable" is no gtrid recovery reads).
const xaDurableStmt = "INSERT INTO " + xaDecisionTable + " (gtrid) VALUES ('rwshard:durable') ON DUPLICATE KEY UPDATE created = NOW(6)"

// makeDurable makes the rollbacks of prepared branches just run on a
// server durable. MariaDB writes an XA ROLLBACK of a prepared branch to
// disk only with the next flush of its redo log, up to a second later
// (XA COMMIT it flushes at once): a crash in between brings the branch
// back prepared, and a replica that applied the rollback stops at the
// next one. A committed write flushes the log up to itself. exec runs a
// statement on the data source's primary.
func makeDurable(ctx context.Context, exec func(ctx context.Context, q string) error) error {
	err := exec(ctx, xaDurableStmt)
	if noSuchTable(err) {
		if err = exec(ctx, xaDecisionDDL); err == nil {
			err = exec(ctx, xaDurableStmt)
		}
	}
	return err
}

// noSuchTable reports error 1146 (ER_NO_SUCH_TABLE).
func noSuchTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// xaDecisions are the decision rows of a connector's committed
// transactions, by data source, waiting to be deleted.
type xaDecisions struct {
	mu   sync.Mutex
	rows map[string][]string
}

// done notes that every branch of the transaction whose decision row is
// gtrid on data source d has committed; every xaFlushAt of them, it
// deletes them on s, d's connection (in autocommit again). A failed
// delete keeps them for the next.
func (x *xaDecisions) done(ctx context.Context, s *sub, d, gtrid string) {
	x.mu.Lock()
	if x.rows == nil {
		x.rows = map[string][]string{}
	}
	x.rows[d] = append(x.rows[d], gtrid)
	var batch []string
	if len(x.rows[d]) >= xaFlushAt {
		batch, x.rows[d] = x.rows[d], nil
	}
	x.mu.Unlock()
	if batch != nil {
		if _, err := s.exec(ctx, deleteDecisions(batch), nil, false); err != nil {
			x.putBack(d, batch)
		}
	}
}

// take removes and returns every waiting row, for recovery to delete.
func (x *xaDecisions) take() map[string][]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := x.rows
	x.rows = nil
	return out
}

// putBack returns rows a delete failed to remove.
func (x *xaDecisions) putBack(d string, gtrids []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rows == nil {
		x.rows = map[string][]string{}
	}
	x.rows[d] = append(x.rows[d], gtrids...)
}

// deleteDecisions deletes the rows of gtrids by primary key: record
// locks only, no gap locks that would hold up other transactions'
// inserts.
func deleteDecisions(gtrids []string) string {
	var b strings.Builder
	b.WriteString("DELETE FROM " + xaDecisionTable + " WHERE gtrid IN (")
	for i, gt := range gtrids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("X'" + hex.EncodeToString([]byte(gt)) + "'")
	}
	b.WriteByte(')')
	return b.String()
}
