package shard

import (
	"database/sql/driver"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mergeSrc is a rowSource over rows in memory that counts its calls. With
// reuse it behaves like go-sql-driver/mysql: []byte values point into one
// buffer per column that the next Next (and Close) overwrite, so a merge
// that keeps a value too long reads garbage.
type mergeSrc struct {
	cols     []string
	rows     [][]driver.Value
	gen      func(i int, dest []driver.Value) // rows made on demand instead of rows
	n        int                              // number of gen rows
	reuse    bool
	failAt   int // Next fails at this row (with failErr); -1: never
	failErr  error
	closeErr error

	pos     int
	nexts   int
	closes  int
	scratch [][]byte
}

func newMergeSrc(cols []string, rows ...[]driver.Value) *mergeSrc {
	return &mergeSrc{cols: cols, rows: rows, failAt: -1}
}

func (s *mergeSrc) Columns() []string { return s.cols }

func (s *mergeSrc) Next(dest []driver.Value) error {
	s.nexts++
	if s.closes > 0 {
		panic("mergeSrc: Next after Close")
	}
	if s.pos == s.failAt {
		return s.failErr
	}
	total := len(s.rows)
	if s.gen != nil {
		total = s.n
	}
	if s.pos >= total {
		return io.EOF
	}
	if s.gen != nil {
		s.gen(s.pos, dest)
	} else {
		copy(dest, s.rows[s.pos])
	}
	s.pos++
	if s.reuse {
		if s.scratch == nil {
			s.scratch = make([][]byte, len(dest))
		}
		for i, v := range dest {
			if b, ok := v.([]byte); ok {
				if cap(s.scratch[i]) < len(b) {
					s.scratch[i] = make([]byte, 0, 2*len(b)+16)
				}
				mergeScribble(s.scratch[i][:cap(s.scratch[i])])
				s.scratch[i] = append(s.scratch[i][:0], b...)
				dest[i] = s.scratch[i]
			}
		}
	}
	return nil
}

func mergeScribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

func (s *mergeSrc) Close() error {
	s.closes++
	for _, b := range s.scratch {
		mergeScribble(b[:cap(b)])
	}
	return s.closeErr
}

// typedMergeSrc also reports column type names, as mysql's rows do.
type typedMergeSrc struct {
	*mergeSrc
	types []string
}

func (s typedMergeSrc) ColumnTypeDatabaseTypeName(i int) string { return s.types[i] }

// mergeDrain reads m to the end (or to an error), deep-copying each row,
// then closes it.
func mergeDrain(t testing.TB, m rowSource) ([][]driver.Value, error) {
	t.Helper()
	var out [][]driver.Value
	var err error
	for {
		dest := make([]driver.Value, len(m.Columns()))
		if err = m.Next(dest); err != nil {
			break
		}
		for i, v := range dest {
			if b, ok := v.([]byte); ok {
				dest[i] = append([]byte{}, b...)
			}
		}
		out = append(out, dest)
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	return out, err
}

// mergeAll merges and drains, failing the test on an error.
func mergeAll(t testing.TB, plan mergePlan, srcs ...*mergeSrc) [][]driver.Value {
	t.Helper()
	m, err := merge(plan, mergeSources(srcs))
	require.NoError(t, err)
	rows, err := mergeDrain(t, m)
	require.NoError(t, err)
	for i, s := range srcs {
		require.Equal(t, 1, s.closes, "source %d closed %d times", i, s.closes)
	}
	return rows
}

func mergeSources(srcs []*mergeSrc) []rowSource {
	out := make([]rowSource, len(srcs))
	for i, s := range srcs {
		out[i] = s
	}
	return out
}

// mrow builds a row; strings become []byte as MySQL sends text.
func mrow(vals ...any) []driver.Value {
	row := make([]driver.Value, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case string:
			row[i] = []byte(x)
		case int:
			row[i] = int64(x)
		default:
			row[i] = x
		}
	}
	return row
}

// mplain renders rows for readable assertions: []byte as string.
func mplain(rows [][]driver.Value) [][]any {
	if len(rows) == 0 {
		return nil
	}
	out := make([][]any, len(rows))
	for i, row := range rows {
		out[i] = make([]any, len(row))
		for j, v := range row {
			switch x := v.(type) {
			case []byte:
				out[i][j] = string(x)
			case time.Time:
				out[i][j] = x.UTC().Format(time.RFC3339Nano)
			default:
				out[i][j] = x
			}
		}
	}
	return out
}

// mwant is mplain's expected side: ints become int64.
func mwant(rows ...[]any) [][]any {
	for _, row := range rows {
		for j, v := range row {
			if x, ok := v.(int); ok {
				row[j] = int64(x)
			}
		}
	}
	return rows
}
