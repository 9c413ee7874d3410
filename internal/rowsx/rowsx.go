// Package rowsx is the one rows adapter of rwshard: every result set the
// driver hands to database/sql, plain or sharded, is go-sql-driver's own
// or a merge of several, wrapped in Rows, which forwards each optional
// driver.Rows interface (further result sets, scan types, database type
// names, lengths, nullability, precision and scale). Wrappers embed Rows
// and add only what they do on Close.
package rowsx

import (
	"database/sql/driver"
	"io"
	"reflect"
)

var (
	_ driver.RowsNextResultSet              = Rows{}
	_ driver.RowsColumnTypeScanType         = Rows{}
	_ driver.RowsColumnTypeDatabaseTypeName = Rows{}
	_ driver.RowsColumnTypeLength           = Rows{}
	_ driver.RowsColumnTypeNullable         = Rows{}
	_ driver.RowsColumnTypePrecisionScale   = Rows{}
)

// Rows is a driver.Rows that forwards every optional interface. Column
// metadata comes from Meta when it is set (a merge of several shards
// describes its columns by a copy of the first shard's), else from Rows.
type Rows struct {
	driver.Rows
	Meta ColumnTyper
}

// ColumnTyper is the column metadata part of the optional interfaces.
type ColumnTyper interface {
	ColumnTypeScanType(i int) reflect.Type
	ColumnTypeDatabaseTypeName(i int) string
	ColumnTypeLength(i int) (int64, bool)
	ColumnTypeNullable(i int) (bool, bool)
	ColumnTypePrecisionScale(i int) (int64, int64, bool)
}

func (r Rows) meta() any {
	if r.Meta != nil {
		return r.Meta
	}
	return r.Rows
}

func (r Rows) HasNextResultSet() bool {
	if m, ok := r.Rows.(driver.RowsNextResultSet); ok {
		return m.HasNextResultSet()
	}
	return false
}

func (r Rows) NextResultSet() error {
	if m, ok := r.Rows.(driver.RowsNextResultSet); ok {
		return m.NextResultSet()
	}
	return io.EOF
}

// AnyType is the scan type of a column whose driver does not say.
var AnyType = reflect.TypeFor[any]()

func (r Rows) ColumnTypeScanType(i int) reflect.Type { return scanType(r.meta(), i) }
func (r Rows) ColumnTypeDatabaseTypeName(i int) string {
	return databaseTypeName(r.meta(), i)
}
func (r Rows) ColumnTypeLength(i int) (int64, bool)  { return length(r.meta(), i) }
func (r Rows) ColumnTypeNullable(i int) (bool, bool) { return nullable(r.meta(), i) }
func (r Rows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return precisionScale(r.meta(), i)
}

// The column-type methods alone: driver.RowsColumnType… embed
// driver.Rows, which a Meta need not implement.
type (
	scanTyper       interface{ ColumnTypeScanType(int) reflect.Type }
	databaseTyper   interface{ ColumnTypeDatabaseTypeName(int) string }
	lengther        interface{ ColumnTypeLength(int) (int64, bool) }
	nullabler       interface{ ColumnTypeNullable(int) (bool, bool) }
	precisionScaler interface {
		ColumnTypePrecisionScale(int) (int64, int64, bool)
	}
)

func scanType(r any, i int) reflect.Type {
	if m, ok := r.(scanTyper); ok {
		return m.ColumnTypeScanType(i)
	}
	return AnyType
}

func databaseTypeName(r any, i int) string {
	if m, ok := r.(databaseTyper); ok {
		return m.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func length(r any, i int) (int64, bool) {
	if m, ok := r.(lengther); ok {
		return m.ColumnTypeLength(i)
	}
	return 0, false
}

func nullable(r any, i int) (bool, bool) {
	if m, ok := r.(nullabler); ok {
		return m.ColumnTypeNullable(i)
	}
	return false, false
}

func precisionScale(r any, i int) (int64, int64, bool) {
	if m, ok := r.(precisionScaler); ok {
		return m.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

// Column is what a driver said about one column.
type Column struct {
	Name                  string
	ScanType              reflect.Type
	DatabaseTypeName      string
	Length                int64
	HasLength             bool
	Nullable, HasNullable bool
	Precision, Scale      int64
	HasPrecisionScale     bool
}

// Columns is a copy of a result set's column metadata, for rows read into
// memory after their driver rows are closed.
type Columns []Column

// Describe copies the column metadata of r.
func Describe(r driver.Rows) Columns {
	names := r.Columns()
	out := make(Columns, len(names))
	for i, name := range names {
		c := Column{Name: name, ScanType: scanType(r, i), DatabaseTypeName: databaseTypeName(r, i)}
		c.Length, c.HasLength = length(r, i)
		c.Nullable, c.HasNullable = nullable(r, i)
		c.Precision, c.Scale, c.HasPrecisionScale = precisionScale(r, i)
		out[i] = c
	}
	return out
}

// Names returns the column names.
func (cs Columns) Names() []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func (cs Columns) ColumnTypeScanType(i int) reflect.Type   { return cs[i].ScanType }
func (cs Columns) ColumnTypeDatabaseTypeName(i int) string { return cs[i].DatabaseTypeName }
func (cs Columns) ColumnTypeLength(i int) (int64, bool)    { return cs[i].Length, cs[i].HasLength }
func (cs Columns) ColumnTypeNullable(i int) (bool, bool)   { return cs[i].Nullable, cs[i].HasNullable }
func (cs Columns) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return cs[i].Precision, cs[i].Scale, cs[i].HasPrecisionScale
}
