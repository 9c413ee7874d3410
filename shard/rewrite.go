package shard

// SQL rewrite: printing a statement's AST back to SQL, once per SQL text,
// into a template that each routing call fills in without touching the AST
// again.
//
// The analysis (route_analyze.go) edits a clone of the parsed statement:
// every reference to a logical table that a unit must rename becomes a
// marker TableName, the multi-shard LIMIT becomes a marker node, a generated
// key becomes a marker argument. templatePrinter prints that clone through a
// sqlparser NodeFormatter and cuts the text at every marker and at every
// '?' placeholder. Rendering a unit is then string concatenation: the
// physical table names of the unit go into the table holes, '?' into the
// placeholder holes while the matching argument is appended to the unit's
// arguments, so Unit.Args follow the placeholders in print order even when
// the rewrite moved, dropped or duplicated expressions.
//
// Templates are immutable once built and shared by concurrent calls.

import (
	"database/sql/driver"
	"math"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// pieceKind says what a template piece prints.
type pieceKind uint8

const (
	pieceText       pieceKind = iota // text as is
	pieceTable                       // physical name of table reference n
	pieceArg                         // '?' for argument n (0-based position in the caller's args)
	pieceKey                         // the generated key of the row being printed
	pieceLimit                       // the LIMIT of a multi-shard read
	pieceConstraint                  // constraint name text + "_" + physical name of table reference n
	pieceRowStart                    // (marks only) an INSERT row begins
	pieceRowEnd                      // (marks only) an INSERT row ends
)

type piece struct {
	kind pieceKind
	n    int
	text string
}

// sqlTemplate is a printed statement cut at its holes. Statements other
// than a split INSERT have only head; a split INSERT has the text before
// its first row in head, one entry per VALUES row in rows and the text
// after the last row (ON DUPLICATE KEY UPDATE …) in tail.
type sqlTemplate struct {
	head []piece
	rows [][]piece
	tail []piece
	size int // bytes of text, to size the builder
}

// tableMarkerPrefix starts the name of a marker TableName; no SQL text can
// spell it (the tokenizer does not accept NUL in identifiers).
const tableMarkerPrefix = "\x00rwshard:t"

// keyArgName names the marker Argument of a generated key.
const keyArgName = "\x00rwshard:key"

func tableMarker(i int) sqlparser.TableName {
	return sqlparser.TableName{Name: sqlparser.NewIdentifierCS(tableMarkerPrefix + strconv.Itoa(i))}
}

// constraintMarkerPrefix starts a constraint name that each unit prints
// with its table's physical name as a suffix: prefix, table reference,
// ':', the name.
const constraintMarkerPrefix = "\x00rwshard:c"

func constraintMarker(table int, name string) sqlparser.IdentifierCI {
	return sqlparser.NewIdentifierCI(constraintMarkerPrefix + strconv.Itoa(table) + ":" + name)
}

func constraintMarkerOf(id sqlparser.IdentifierCI) (table int, name string, ok bool) {
	s, found := strings.CutPrefix(id.String(), constraintMarkerPrefix)
	if !found {
		return 0, "", false
	}
	n, name, found := strings.Cut(s, ":")
	table, err := strconv.Atoi(n)
	return table, name, found && err == nil
}

func markerIndex(t sqlparser.TableName) (int, bool) {
	s := t.Name.String()
	if !strings.HasPrefix(s, tableMarkerPrefix) || t.Qualifier.NotEmpty() {
		return 0, false
	}
	n, err := strconv.Atoi(s[len(tableMarkerPrefix):])
	return n, err == nil
}

// placeholderIndex returns the 0-based position of the argument that
// vitess names "v<n>" for the n-th '?' of the statement.
func placeholderIndex(name string) (int, bool) {
	if len(name) < 2 || name[0] != 'v' {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 1 || strconv.Itoa(n) != name[1:] {
		return 0, false
	}
	return n - 1, true
}

type templateMark struct {
	pos  int
	kind pieceKind
	n    int
	text string
}

// templatePrinter is the NodeFormatter state of one print.
type templatePrinter struct {
	marks     []templateMark
	limit     *sqlparser.Limit // the node printed as pieceLimit, if any
	splitRows bool             // cut the INSERT's VALUES rows
}

func (tp *templatePrinter) mark(buf *sqlparser.TrackedBuffer, kind pieceKind, n int) {
	tp.marks = append(tp.marks, templateMark{pos: buf.Len(), kind: kind, n: n})
}

func (tp *templatePrinter) format(buf *sqlparser.TrackedBuffer, node sqlparser.SQLNode) {
	switch n := node.(type) {
	case *sqlparser.Argument:
		if n.Name == keyArgName {
			tp.mark(buf, pieceKey, 0)
			return
		}
		if i, ok := placeholderIndex(n.Name); ok {
			tp.mark(buf, pieceArg, i)
			return
		}
		n.Format(buf) // named arguments were refused by the analysis
	case sqlparser.TableName:
		if i, ok := markerIndex(n); ok {
			tp.mark(buf, pieceTable, i)
			return
		}
		n.Format(buf)
	case sqlparser.IdentifierCI:
		if i, name, ok := constraintMarkerOf(n); ok {
			tp.marks = append(tp.marks, templateMark{pos: buf.Len(), kind: pieceConstraint, n: i, text: name})
			return
		}
		n.Format(buf)
	case *sqlparser.Limit:
		if n != nil && n == tp.limit {
			tp.mark(buf, pieceLimit, 0)
			return
		}
		n.Format(buf)
	case sqlparser.Values:
		if !tp.splitRows {
			n.Format(buf)
			return
		}
		buf.WriteString("values ")
		for i, row := range n {
			tp.mark(buf, pieceRowStart, i)
			buf.Myprintf("%v", row)
			tp.mark(buf, pieceRowEnd, i)
		}
	default:
		node.Format(buf)
	}
}

// buildTemplate prints stmt and cuts it into a template.
func buildTemplate(stmt sqlparser.SQLNode, limit *sqlparser.Limit, splitRows bool) *sqlTemplate {
	tp := &templatePrinter{limit: limit, splitRows: splitRows}
	buf := sqlparser.NewTrackedBuffer(tp.format)
	buf.Myprintf("%v", stmt)
	text := buf.String()

	t := &sqlTemplate{size: len(text)}
	cur := &t.head
	last := 0
	flush := func(pos int) {
		if pos > last {
			*cur = append(*cur, piece{kind: pieceText, text: text[last:pos]})
		}
		last = pos
	}
	for _, m := range tp.marks {
		flush(m.pos)
		switch m.kind {
		case pieceRowStart:
			t.rows = append(t.rows, nil)
			cur = &t.rows[len(t.rows)-1]
		case pieceRowEnd:
			cur = &t.tail
		default:
			*cur = append(*cur, piece{kind: m.kind, n: m.n, text: m.text})
		}
	}
	flush(len(text))
	return t
}

// unitRender holds what one unit's rendering needs.
type unitRender struct {
	tables []string            // escaped physical name per table reference
	in     []driver.NamedValue // the caller's arguments
	out    []driver.NamedValue // the unit's arguments, appended in print order
	key    int64               // generated key of the current row
	keyArg bool                // print generated keys as '?' (the statement has placeholders)
	limit  limitValues         // multi-shard LIMIT
}

// limitValues is the LIMIT a multi-shard read sends to every shard:
// "LIMIT n" or "LIMIT 0, n"; arg prints n as a placeholder.
type limitValues struct {
	n         int64
	argValue  driver.Value // the value bound to the placeholder when arg
	zeroStart bool
	arg       bool
}

func (u *unitRender) addArg(v driver.Value) {
	u.out = append(u.out, driver.NamedValue{Ordinal: len(u.out) + 1, Value: v})
}

func (u *unitRender) pieces(b *strings.Builder, ps []piece) {
	for i := range ps {
		p := &ps[i]
		switch p.kind {
		case pieceText:
			b.WriteString(p.text)
		case pieceTable:
			b.WriteString(u.tables[p.n])
		case pieceConstraint:
			b.WriteString(escapeTableName(p.text + "_" + strings.Trim(u.tables[p.n], "`")))
		case pieceArg:
			b.WriteByte('?')
			nv := u.in[p.n]
			nv.Ordinal = len(u.out) + 1
			u.out = append(u.out, nv)
		case pieceKey:
			if u.keyArg {
				b.WriteByte('?')
				u.addArg(u.key)
			} else {
				var d [20]byte
				b.Write(strconv.AppendInt(d[:0], u.key, 10))
			}
		case pieceLimit:
			b.WriteString(" limit ")
			if u.limit.zeroStart {
				b.WriteString("0, ")
			}
			if u.limit.arg {
				b.WriteByte('?')
				u.addArg(u.limit.argValue)
			} else {
				var d [20]byte
				b.Write(strconv.AppendInt(d[:0], u.limit.n, 10))
			}
		}
	}
}

// render prints a template without row selection (any statement but a
// split INSERT).
func (t *sqlTemplate) render(u *unitRender) string {
	var b strings.Builder
	b.Grow(t.size + 16*len(u.tables))
	u.pieces(&b, t.head)
	return b.String()
}

// renderRows prints a split INSERT with the rows rows (indexes into
// t.rows), keys[i] being the generated key of row i when keys is set.
func (t *sqlTemplate) renderRows(u *unitRender, rows []int, keys []int64) string {
	var b strings.Builder
	b.Grow(t.size + 16*len(u.tables))
	u.pieces(&b, t.head)
	for j, r := range rows {
		if j > 0 {
			b.WriteString(", ")
		}
		if keys != nil {
			u.key = keys[r]
		}
		u.pieces(&b, t.rows[r])
	}
	u.pieces(&b, t.tail)
	return b.String()
}

// addSat adds two non-negative int64 without overflow.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
