package shard

// The columns of sharded tables, for an INSERT or REPLACE without a
// column list: read from information_schema on every data node of the
// table (on the primaries), compared, and cached per rules state until
// DDL through rwshard changes the table.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/rwshard/rwshard/hint"
)

// ErrColumnsDiffer: the physical tables of a logical table do not have the
// same columns in the same order, so an INSERT without a column list has
// no one meaning.
var ErrColumnsDiffer = errors.New("rwshard: shard: data nodes differ in their columns")

const columnsQuery = "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"

// columnCache holds the columns of logical tables.
type columnCache struct {
	mu sync.Mutex
	m  map[string][]string
}

func (c *columnCache) get(table string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[table]
}

func (c *columnCache) put(table string, cols []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]string)
	}
	c.m[table] = cols
}

// forget drops the columns of tables (after DDL on them).
func (c *columnCache) forget(tables []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tables {
		delete(c.m, strings.ToLower(t))
	}
}

// columnSource is the ColumnSource of a statement of sc under st.
func (sc *conn) columnSource(st *state) ColumnSource {
	return ColumnSourceFunc(func(ctx context.Context, table string) ([]string, error) {
		if cols := st.columns.get(table); cols != nil {
			return cols, nil
		}
		var first []string
		var firstNode DataNode
		for _, n := range st.router.dataNodes(table) {
			cols, err := sc.nodeColumns(ctx, st, n)
			if err != nil {
				return nil, fmt.Errorf("reading the columns of %s: %w", n, err)
			}
			if len(cols) == 0 {
				return nil, fmt.Errorf("%w: table %s has no columns on data node %s (is it there?)", ErrUnsupported, table, n)
			}
			if first == nil {
				first, firstNode = cols, n
			} else if !slices.EqualFunc(first, cols, strings.EqualFold) {
				return nil, fmt.Errorf("%w: table %s has columns (%s) on %s but (%s) on %s", ErrColumnsDiffer, table,
					strings.Join(first, ", "), firstNode, strings.Join(cols, ", "), n)
			}
		}
		st.columns.put(table, first)
		return first, nil
	})
}

// nodeColumns reads the columns of one physical table, on its primary.
func (sc *conn) nodeColumns(ctx context.Context, st *state, n DataNode) ([]string, error) {
	s, err := sc.sub(ctx, st, n.DataSource)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(hint.Primary(ctx), columnsQuery, []driver.NamedValue{{Ordinal: 1, Value: n.Table}}, true)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return textColumn(rows, "COLUMN_NAME")
}

// textColumn reads the first column of every row of rows as text; name
// says which column in an error about a value that is not text.
func textColumn(rows driver.Rows, name string) ([]string, error) {
	var out []string
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		switch v := dest[0].(type) {
		case []byte:
			out = append(out, string(v))
		case string:
			out = append(out, v)
		default:
			return nil, fmt.Errorf("%s of type %T", name, dest[0])
		}
	}
}
