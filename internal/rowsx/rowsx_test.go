package rowsx

import (
	"database/sql/driver"
	"io"
	"reflect"
	"testing"
)

// typed is driver rows that describe their columns and have a second
// result set.
type typed struct{ next bool }

func (typed) Columns() []string                                 { return []string{"id", "note"} }
func (typed) Close() error                                      { return nil }
func (typed) Next([]driver.Value) error                         { return io.EOF }
func (typed) ColumnTypeScanType(i int) reflect.Type             { return reflect.TypeFor[int64]() }
func (typed) ColumnTypeDatabaseTypeName(i int) string           { return []string{"BIGINT", "VARCHAR"}[i] }
func (typed) ColumnTypeLength(i int) (int64, bool)              { return int64(20 * i), i == 1 }
func (typed) ColumnTypeNullable(i int) (bool, bool)             { return i == 1, true }
func (typed) ColumnTypePrecisionScale(int) (int64, int64, bool) { return 10, 2, true }
func (t *typed) HasNextResultSet() bool                         { return !t.next }
func (t *typed) NextResultSet() error                           { t.next = true; return nil }

type bare struct{}

func (bare) Columns() []string         { return []string{"x"} }
func (bare) Close() error              { return nil }
func (bare) Next([]driver.Value) error { return io.EOF }

func TestRowsForwards(t *testing.T) {
	r := Rows{Rows: &typed{}}
	if r.ColumnTypeDatabaseTypeName(1) != "VARCHAR" || r.ColumnTypeScanType(0) != reflect.TypeFor[int64]() {
		t.Error("column types not forwarded")
	}
	if n, ok := r.ColumnTypeLength(1); n != 20 || !ok {
		t.Error("length not forwarded")
	}
	if !r.HasNextResultSet() || r.NextResultSet() != nil || r.HasNextResultSet() {
		t.Error("result sets not forwarded")
	}
	b := Rows{Rows: bare{}}
	if b.ColumnTypeScanType(0) != AnyType || b.HasNextResultSet() || b.NextResultSet() != io.EOF {
		t.Error("defaults of a driver that says nothing")
	}
}

// Meta describes the columns when set: a copy outlives the rows it came
// from, and need not be a driver.Rows.
func TestRowsMeta(t *testing.T) {
	meta := Describe(&typed{})
	if got := meta.Names(); !reflect.DeepEqual(got, []string{"id", "note"}) {
		t.Fatalf("names %v", got)
	}
	r := Rows{Rows: bare{}, Meta: meta}
	if r.ColumnTypeDatabaseTypeName(0) != "BIGINT" || r.ColumnTypeScanType(1) != reflect.TypeFor[int64]() {
		t.Error("types from Meta")
	}
	if n, ok := r.ColumnTypeNullable(1); !n || !ok {
		t.Error("nullable from Meta")
	}
	if p, s, ok := r.ColumnTypePrecisionScale(0); p != 10 || s != 2 || !ok {
		t.Error("precision from Meta")
	}
}
