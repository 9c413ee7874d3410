package rwshard

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/rwshard/rwshard/internal/rowsx"
)

var (
	_ driver.Rows                           = (*rows)(nil)
	_ driver.RowsNextResultSet              = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeLength           = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*rows)(nil)
)

// rows is the backend driver's result set, unconverted, plus what must
// happen when it is closed: return the backend connection (b), close a
// one-off prepared statement (st), or tell the pinned session (c).
type rows struct {
	// What every result set handed to database/sql sets, on its first
	// cache line (see conn.heldRows); the rest is nil on most.
	rowsx.Rows // the backend's rows, every optional interface forwarded
	c          *conn
	ctx        context.Context
	// write: the rows came from a write on the session (INSERT …
	// RETURNING), recorded for read-your-writes once they are closed.
	write bool
	// log is the transaction replay entry of these rows (Config.TxReplay).
	log *txEntry
	// gen and lost are the session tracker's counts when the statement
	// began: a write's GTID is what it reports by the rows' end.
	gen, lost uint64
	st        driver.Stmt
	b         *backend
	hold      *holdRec // its hold (Config.HoldWarn, HoldLimit); nil: not watched
}

// Next reads a row, folding it into the replay checksum when the rows
// belong to a logged transaction.
func (r *rows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if r.log != nil {
		r.log.fold(dest, err)
	}
	if err != nil && r.hold != nil && r.hold.cut.Load() {
		return fmt.Errorf("%w: %w", ErrHoldLimit, err)
	}
	return err
}

func (r *rows) Close() error {
	err := r.Rows.Close()
	if r.hold != nil {
		r.hold.finish()
		r.hold = nil
	}
	if r.st != nil {
		r.st.Close()
		r.st = nil
	}
	if r.log != nil {
		r.log.closed = true
		r.log = nil
	}
	b, c, write, ctx, gen, lost := r.b, r.c, r.write, r.ctx, r.gen, r.lost
	r.b, r.c, r.ctx = nil, nil, nil
	if b != nil {
		// r may be b's own (backend.rows): releasing b recycles it, so r
		// is not touched after this.
		b.release(isBadConn(err))
	}
	if c != nil {
		c.openRows--
		if r == &c.rows {
			c.rowsOut = false
		}
		if write {
			c.rowsWrote(ctx, err, gen, lost)
		}
		c.unpin()
	}
	if isBadConn(err) {
		return nil // the rows were read; the connection is already discarded
	}
	return err
}

// rowsWrote records, for read-your-writes, the write whose rows (INSERT …
// RETURNING) were just closed with err: as wrote does once they were read
// to the end; in autocommit, as a write of unknown outcome (unsure) when
// the connection broke under them.
func (c *conn) rowsWrote(ctx context.Context, err error, gen, lost uint64) {
	switch {
	case err == nil && c.sess != nil:
		c.recordWrite(ctx, c.sess, true, gen, lost)
	case err != nil && c.ryw && !c.inTx() && judge(ctx, err).mayHaveRun():
		c.cl.unsure(c.scope(ctx))
	}
}
