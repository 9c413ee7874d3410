package shard

// Comparison and equality of result values for the merge: ORDER BY,
// MIN/MAX, GROUP BY and DISTINCT all use the rules below, so that an
// ordering and the grouping of equal values agree.

import (
	"bytes"
	"cmp"
	"database/sql/driver"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"
)

// colClass says how []byte and string values of a column compare.
type colClass uint8

const (
	// classAuto: no type information; text that parses as a decimal number
	// is a number, other text is text.
	classAuto colClass = iota
	// classNumeric: integer, decimal and float columns; text is parsed
	// as a number (decimal, then float syntax).
	classNumeric
	// classText: character, binary, temporal, JSON, ENUM/SET, BIT columns:
	// text compares bytewise.
	classText
	// classTime: TIME columns: "[-]H+:MM:SS[.ffffff]" compares as a signed
	// duration (bytewise order breaks on negative or 100+ hour values).
	classTime
	// classWeight: the rewriter's weight columns (merge_collation.go):
	// weight strings compared as their collation compares the strings.
	classWeight
)

// classOf maps a database type name (driver.RowsColumnTypeDatabaseTypeName)
// to a class; unknown names are classAuto.
func classOf(typeName string) colClass {
	t := strings.ToUpper(strings.TrimSpace(typeName))
	t = strings.TrimPrefix(t, "UNSIGNED ")
	if i := strings.IndexAny(t, "( "); i >= 0 {
		t = t[:i]
	}
	switch t {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT",
		"DECIMAL", "NUMERIC", "DEC", "FLOAT", "DOUBLE", "REAL", "YEAR", "BOOL", "BOOLEAN":
		return classNumeric
	case "CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT",
		"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB",
		"JSON", "ENUM", "SET", "BIT", "GEOMETRY", "VECTOR", "INET4", "INET6", "UUID",
		"DATE", "DATETIME", "TIMESTAMP":
		return classText
	case "TIME":
		return classTime
	}
	return classAuto
}

// isCharType reports a character string type name (CHAR, VARCHAR, the
// TEXT types): the types whose order and equality follow a collation.
func isCharType(typeName string) bool {
	t := strings.ToUpper(strings.TrimSpace(typeName))
	if i := strings.IndexAny(t, "( "); i >= 0 {
		t = t[:i]
	}
	switch t {
	case "CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT":
		return true
	}
	return false
}

// compareValues orders two values of one column; it returns -1, 0 or +1.
//
//   - nil (NULL) is less than every other value; callers invert the result
//     for DESC, which puts NULL last, as MySQL does.
//   - int64, uint64, float64, float32, bool (0/1) and the other Go integer
//     types compare numerically and exactly across types (uint64 above
//     MaxInt64 included; an integer and a float compare by value, not by a
//     rounded conversion). NaN, which MySQL never returns, is below every
//     number.
//   - Text ([]byte or string): in a numeric column (or a column of unknown
//     type when both parse) decimal text such as "12.50" compares as the
//     exact number, also against integers; against a float64 it compares as
//     the nearest float64. In a text column it compares bytewise: binary
//     collation (see mergePlan for case-insensitive collations). In a
//     column of unknown type, numeric text sorts before other text, which
//     keeps the order total.
//   - time.Time compares chronologically.
//   - Different kinds (which one column does not mix) order as NULL <
//     numbers < text < time < others; two values of an unknown Go type are
//     equal.
func compareValues(a, b driver.Value, cls colClass) int {
	if a == nil {
		if b == nil {
			return 0
		}
		return -1
	}
	if b == nil {
		return 1
	}
	// Fast paths for what one column of MySQL rows holds.
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return compareText(x, y, cls)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return compareFloat(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	}
	return compareMixed(a, b, cls)
}

// Kinds of values, in their cross-kind order.
const (
	vkNull = iota
	vkNum
	vkText
	vkTime
	vkOther
)

// numVal is a Go number reduced to one of three representations.
type numVal struct {
	k uint8 // 0 int64, 1 uint64, 2 float64
	i int64
	u uint64
	f float64
}

func valueKind(v driver.Value) (kind int, n numVal, text []byte) {
	switch x := v.(type) {
	case nil:
		return vkNull, n, nil
	case int64:
		return vkNum, numVal{i: x}, nil
	case uint64:
		return vkNum, numVal{k: 1, u: x}, nil
	case float64:
		return vkNum, numVal{k: 2, f: x}, nil
	case float32:
		return vkNum, numVal{k: 2, f: float64(x)}, nil
	case []byte:
		return vkText, n, x
	case string:
		return vkText, n, []byte(x)
	case time.Time:
		return vkTime, n, nil
	case bool:
		if x {
			return vkNum, numVal{i: 1}, nil
		}
		return vkNum, numVal{}, nil
	case int:
		return vkNum, numVal{i: int64(x)}, nil
	case int32:
		return vkNum, numVal{i: int64(x)}, nil
	case int16:
		return vkNum, numVal{i: int64(x)}, nil
	case int8:
		return vkNum, numVal{i: int64(x)}, nil
	case uint:
		return vkNum, numVal{k: 1, u: uint64(x)}, nil
	case uint32:
		return vkNum, numVal{k: 1, u: uint64(x)}, nil
	case uint16:
		return vkNum, numVal{k: 1, u: uint64(x)}, nil
	case uint8:
		return vkNum, numVal{k: 1, u: uint64(x)}, nil
	}
	return vkOther, n, nil
}

func compareMixed(a, b driver.Value, cls colClass) int {
	ka, na, ta := valueKind(a)
	kb, nb, tb := valueKind(b)
	switch {
	case ka == vkNum && kb == vkNum:
		return compareNum(na, nb)
	case ka == vkText && kb == vkText:
		return compareText(ta, tb, cls)
	case ka == vkTime && kb == vkTime:
		return a.(time.Time).Compare(b.(time.Time))
	case ka == vkNum && kb == vkText && (cls == classAuto || cls == classNumeric):
		if c, ok := compareNumText(na, tb, cls); ok {
			return c
		}
	case ka == vkText && kb == vkNum && (cls == classAuto || cls == classNumeric):
		if c, ok := compareNumText(nb, ta, cls); ok {
			return -c
		}
	case ka == vkOther && kb == vkOther:
		return 0
	}
	return cmp.Compare(ka, kb)
}

// compareText compares two texts of a column of class cls.
func compareText(x, y []byte, cls colClass) int {
	switch cls {
	case classText:
		return bytes.Compare(x, y)
	case classWeight:
		return compareWeights(x, y)
	case classTime:
		dx, okx := parseTimeOfDay(x)
		dy, oky := parseTimeOfDay(y)
		switch {
		case okx && oky:
			return cmp.Compare(dx, dy)
		case okx != oky: // durations before other text: the order stays total
			return cmp.Compare(boolInt(oky), boolInt(okx))
		}
		return bytes.Compare(x, y)
	}
	dx, okx := parseDecimal(x)
	dy, oky := parseDecimal(y)
	if okx && oky {
		return compareDecimal(dx, dy)
	}
	if cls == classNumeric { // e.g. "1e+20": float syntax
		fx, errx := strconv.ParseFloat(string(x), 64)
		fy, erry := strconv.ParseFloat(string(y), 64)
		okx, oky = errx == nil, erry == nil
		if okx && oky {
			return compareFloat(fx, fy)
		}
	}
	if okx != oky { // numbers before other text: the order stays total
		return cmp.Compare(boolInt(oky), boolInt(okx))
	}
	return bytes.Compare(x, y)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compareNumText compares a number with text that parses as a number;
// ok is false when it does not.
func compareNumText(n numVal, t []byte, cls colClass) (int, bool) {
	if n.k == 2 {
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return 0, false
		}
		return compareFloat(n.f, f), true
	}
	d, ok := parseDecimal(t)
	if !ok {
		if cls != classNumeric {
			return 0, false
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return 0, false
		}
		return -compareNum(numVal{k: 2, f: f}, n), true
	}
	var buf [24]byte
	var s []byte
	if n.k == 0 {
		s = strconv.AppendInt(buf[:0], n.i, 10)
	} else {
		s = strconv.AppendUint(buf[:0], n.u, 10)
	}
	dn, _ := parseDecimal(s)
	return compareDecimal(dn, d), true
}

func compareNum(a, b numVal) int {
	switch {
	case a.k == 0 && b.k == 0:
		return cmp.Compare(a.i, b.i)
	case a.k == 1 && b.k == 1:
		return cmp.Compare(a.u, b.u)
	case a.k == 2 && b.k == 2:
		return compareFloat(a.f, b.f)
	case a.k == 0 && b.k == 1:
		if a.i < 0 {
			return -1
		}
		return cmp.Compare(uint64(a.i), b.u)
	case a.k == 1 && b.k == 0:
		return -compareNum(b, a)
	case a.k == 0 && b.k == 2:
		return compareIntFloat(a.i, b.f)
	case a.k == 2 && b.k == 0:
		return -compareIntFloat(b.i, a.f)
	case a.k == 1 && b.k == 2:
		return compareUintFloat(a.u, b.f)
	default: // a float, b uint
		return -compareUintFloat(b.u, a.f)
	}
}

// compareFloat orders floats with NaN below every number.
func compareFloat(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return -1
	case yn:
		return 1
	}
	return cmp.Compare(x, y)
}

const (
	float2p63 = 9223372036854775808.0  // 2^63, exact in float64
	float2p64 = 18446744073709551616.0 // 2^64
)

// compareIntFloat compares exactly: converting i to float64 would round
// above 2^53, converting f to int64 would truncate.
func compareIntFloat(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return 1
	case f >= float2p63:
		return -1
	case f < -float2p63:
		return 1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(i, int64(t)); c != 0 {
		return c
	}
	return -cmp.Compare(f-t, 0) // f has a fraction beyond i, or not
}

func compareUintFloat(u uint64, f float64) int {
	switch {
	case math.IsNaN(f):
		return 1
	case f < 0:
		return 1
	case f >= float2p64:
		return -1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(u, uint64(t)); c != 0 {
		return c
	}
	return -cmp.Compare(f-t, 0)
}

// decText is decimal text split up: MySQL sends DECIMAL as "-123.4500".
type decText struct {
	neg  bool
	ip   []byte // integer digits without leading zeros
	frac []byte // fraction digits as written (scale = len)
}

// parseDecimal accepts [+-]digits[.digits] (at least one digit).
func parseDecimal(b []byte) (d decText, ok bool) {
	i := 0
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		d.neg = b[0] == '-'
		i = 1
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	ip := b[start:i]
	n := len(ip)
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		d.frac = b[fs:i]
		n += len(d.frac)
	}
	if i != len(b) || n == 0 {
		return decText{}, false
	}
	for len(ip) > 0 && ip[0] == '0' {
		ip = ip[1:]
	}
	d.ip = ip
	return d, true
}

// significantFrac is the fraction without trailing zeros.
func (d decText) significantFrac() []byte {
	f := d.frac
	for len(f) > 0 && f[len(f)-1] == '0' {
		f = f[:len(f)-1]
	}
	return f
}

func (d decText) isZero() bool { return len(d.ip) == 0 && len(d.significantFrac()) == 0 }

func compareDecimal(a, b decText) int {
	an := a.neg && !a.isZero()
	bn := b.neg && !b.isZero()
	if an != bn {
		if an {
			return -1
		}
		return 1
	}
	c := cmp.Compare(len(a.ip), len(b.ip))
	if c == 0 {
		c = bytes.Compare(a.ip, b.ip)
	}
	if c == 0 {
		c = bytes.Compare(a.significantFrac(), b.significantFrac())
	}
	if an {
		return -c
	}
	return c
}

// appendCanonical writes d so that equal numbers read the same: no "+",
// no leading or trailing zeros, no "-0".
func (d decText) appendCanonical(b []byte) []byte {
	if d.isZero() {
		return append(b, '0')
	}
	if d.neg {
		b = append(b, '-')
	}
	if len(d.ip) == 0 {
		b = append(b, '0')
	}
	b = append(b, d.ip...)
	if f := d.significantFrac(); len(f) > 0 {
		b = append(b, '.')
		b = append(b, f...)
	}
	return b
}

// parseTimeOfDay reads a TIME value "[-]H+:MM:SS[.ffffff]" as microseconds.
func parseTimeOfDay(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var parts [3]int64
	p, digits := 0, 0
	i := 0
	for ; i < len(b) && b[i] != '.'; i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if digits > 12 {
				return 0, false
			}
			parts[p] = parts[p]*10 + int64(c-'0')
			digits++
		case c == ':' && p < 2 && digits > 0:
			p++
			digits = 0
		default:
			return 0, false
		}
	}
	if p != 2 || digits == 0 {
		return 0, false
	}
	var micro int64
	if i < len(b) {
		f := b[i+1:]
		if len(f) > 6 {
			return 0, false
		}
		for j := 0; j < 6; j++ {
			micro *= 10
			if j < len(f) {
				if f[j] < '0' || f[j] > '9' {
					return 0, false
				}
				micro += int64(f[j] - '0')
			}
		}
	}
	v := ((parts[0]*60+parts[1])*60+parts[2])*1_000_000 + micro
	if neg {
		v = -v
	}
	return v, true
}

// compareRows compares two rows on keys.
func compareRows(a, b []driver.Value, keys []orderKey, cls []colClass) int {
	for _, k := range keys {
		c := compareValues(a[k.Index], b[k.Index], cls[k.Index])
		if c != 0 {
			if k.Desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// appendKey appends an encoding of v such that two values of the column
// encode alike exactly when compareValues finds them equal (up to float64
// against decimal text, where it compares through a rounding): numbers
// canonical decimal text, text its bytes, time the instant. Used for
// GROUP BY and DISTINCT in memory.
func appendKey(b []byte, v driver.Value, cls colClass) []byte {
	var tag byte
	var scratch [40]byte
	var payload []byte
	kind, n, text := valueKind(v)
	switch kind {
	case vkNull:
		return append(b, 'z')
	case vkNum:
		tag, payload = 'n', appendNumKey(scratch[:0], n)
	case vkText:
		tag, payload = 's', text
		switch cls {
		case classText:
		case classWeight:
			payload = appendWeightKey(scratch[:0], text)
		case classTime:
			if d, ok := parseTimeOfDay(text); ok {
				tag, payload = 'd', binary.BigEndian.AppendUint64(scratch[:0], uint64(d))
			}
		default:
			if d, ok := parseDecimal(text); ok {
				tag, payload = 'n', d.appendCanonical(scratch[:0])
			} else if cls == classNumeric {
				if f, err := strconv.ParseFloat(string(text), 64); err == nil {
					tag, payload = 'n', appendNumKey(scratch[:0], numVal{k: 2, f: f})
				}
			}
		}
	case vkTime:
		t := v.(time.Time)
		tag = 't'
		payload = binary.BigEndian.AppendUint64(scratch[:0], uint64(t.Unix()))
		payload = binary.BigEndian.AppendUint32(payload, uint32(t.Nanosecond()))
	default:
		return append(b, '?')
	}
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// appendNumKey writes a number as canonical decimal text.
func appendNumKey(b []byte, n numVal) []byte {
	switch n.k {
	case 0:
		return strconv.AppendInt(b, n.i, 10)
	case 1:
		return strconv.AppendUint(b, n.u, 10)
	}
	f := n.f
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 0):
		if f > 0 {
			return append(b, "+Inf"...)
		}
		return append(b, "-Inf"...)
	case f == math.Trunc(f) && f >= -float2p63 && f < float2p63:
		return strconv.AppendInt(b, int64(f), 10)
	case f == math.Trunc(f) && f >= 0 && f < float2p64:
		return strconv.AppendUint(b, uint64(f), 10)
	}
	// The shortest 'f' form is canonical: no leading or trailing zeros.
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// appendRowKey encodes the values at cols (all of row when cols is nil).
func appendRowKey(b []byte, row []driver.Value, cols []int, cls []colClass) []byte {
	if cols == nil {
		for i, v := range row {
			b = appendKey(b, v, cls[i])
		}
		return b
	}
	for _, i := range cols {
		b = appendKey(b, row[i], cls[i])
	}
	return b
}
