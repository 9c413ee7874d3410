package shard

import (
	"context"
	"database/sql/driver"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rwshard/rwshard/internal/rowsx"
)

// Result sets of a sharded connection. Each wraps rowsx.Rows, the
// driver's one rows adapter, and adds only what it does on Close.

// releasingRows releases the rules state when the rows are closed.
type releasingRows struct {
	rowsx.Rows
	release func()
	once    sync.Once
}

func (r *releasingRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.release)
	return err
}

// unitRows are one unit's rows, closed once whatever the merge does: the
// rows of an rwshard connection are recycled when closed. conn, when set,
// is a logical connection of the unit's own, which ends with them.
type unitRows struct {
	rowsx.Rows
	conn   driver.Conn
	closed bool
}

func (u *unitRows) Close() error {
	if u.closed {
		return nil
	}
	u.closed = true
	err := u.Rows.Close()
	if u.conn != nil {
		u.conn.Close()
	}
	return err
}

// cancelGroup cancels a multi-shard read's context when the last of its
// sources is closed.
type cancelGroup struct {
	open   atomic.Int32
	cancel context.CancelFunc
}

// cancelOnClose is one source of a cancelGroup.
type cancelOnClose struct {
	rowsx.Rows
	group  *cancelGroup
	closed bool
}

func (c *cancelOnClose) Close() error {
	err := c.Rows.Close()
	if !c.closed {
		c.closed = true
		if c.group.open.Add(-1) == 0 {
			c.group.cancel()
		}
	}
	return err
}

// bufferedRows is a unit's result read into memory.
type bufferedRows struct {
	cols []string
	rows [][]driver.Value
}

// buffer reads r into memory and closes it; the result keeps r's column
// metadata.
func buffer(r driver.Rows) (driver.Rows, error) {
	defer r.Close()
	meta := rowsx.Describe(r)
	b := &bufferedRows{cols: meta.Names()}
	for {
		row := make([]driver.Value, len(b.cols))
		err := r.Next(row)
		if err == io.EOF {
			return rowsx.Rows{Rows: b, Meta: meta}, nil
		}
		if err != nil {
			return nil, err
		}
		for i, v := range row {
			if bs, ok := v.([]byte); ok {
				row[i] = slices.Clone(bs) // the driver reuses its buffer
			}
		}
		b.rows = append(b.rows, row)
	}
}

func (b *bufferedRows) Columns() []string { return b.cols }
func (b *bufferedRows) Close() error      { b.rows = nil; return nil }
func (b *bufferedRows) Next(dest []driver.Value) error {
	if len(b.rows) == 0 {
		return io.EOF
	}
	copy(dest, b.rows[0])
	b.rows = b.rows[1:]
	return nil
}

// noRows is the empty result of a session statement sent with Query.
type noRows struct{}

func (noRows) Columns() []string         { return nil }
func (noRows) Close() error              { return nil }
func (noRows) Next([]driver.Value) error { return io.EOF }
