package route

import (
	"slices"
	"strings"
)

// Tables returns the tables the SELECTs of a SQL text read, lower case
// and unquoted, "schema.table" where the text qualifies them, each once:
// the names after FROM and JOIN and in FROM lists (see tableScan). It is
// for rules that choose among replicas (the driver's pool rules); it does
// not decide where a statement may run, and unlike Classify it allocates,
// so the driver calls it once per statement text, from a Classifier's tag
// function.
func Tables(sql string) []string {
	var l lexer
	l.reset(sql, reading{}, false)
	var ts tableScan
	var out []string
	for {
		t := l.next()
		if t.kind == tkEOF || t.kind == tkSemi && ts.depth == 0 {
			ts.done()
			for _, n := range ts.names {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
			if t.kind == tkEOF {
				return out
			}
			ts = tableScan{names: ts.names[:0]}
			l.endStatement()
			continue
		}
		ts.feed(sql, t)
	}
}

// tableScan finds the tables a statement's SELECTs read, for rules that
// route by table (the driver's pool rules): the names after FROM and JOIN,
// and after the commas of a FROM list, at the parenthesis depth of a
// SELECT. A FROM inside a function's parentheses (EXTRACT(YEAR FROM d),
// TRIM(… FROM s)) is not a SELECT's and names no table; a name followed
// by '(' is a table function (JSON_TABLE) and is left out. It reads the
// first reading's tokens only and does not decide the statement's kind:
// a table it misses or finds too many changes which replicas may serve a
// read, never whether the read may run on a replica.
type tableScan struct {
	depth   int
	selects uint64 // bit d: a SELECT at depth d (depths ≥ 64 are not tracked)
	froms   uint64 // bit d: in the FROM clause of depth d's SELECT
	want    bool   // the next name is a table reference
	part    uint8  // 0: no name pending; 1: a name, '.' may follow; 2: after its '.'
	first   string // the pending name
	names   []string
}

func bit(d int) uint64 {
	if d < 0 || d >= 64 {
		return 0
	}
	return 1 << uint(d)
}

// feed processes one token.
func (ts *tableScan) feed(src string, t token) {
	if ts.part == 1 && t.kind != tkDot {
		if t.kind != tkLParen { // name( is a table function
			ts.add(ts.first)
		}
		ts.part = 0
	}
	switch t.kind {
	case tkLParen:
		ts.depth++
		if ts.want { // a derived table or a parenthesized join: (a JOIN b), (SELECT …)
			ts.froms |= bit(ts.depth)
		}
	case tkRParen:
		ts.selects &^= bit(ts.depth)
		ts.froms &^= bit(ts.depth)
		if ts.depth > 0 {
			ts.depth--
		}
		ts.want = false
	case tkComma:
		ts.want = ts.froms&bit(ts.depth) != 0
	case tkDot:
		if ts.part == 1 {
			ts.part = 2
		}
	case tkWord, tkQuoted:
		text := src[t.start:t.end]
		if t.kind == tkQuoted {
			text = unquote(text)
		}
		if ts.part == 2 {
			ts.part = 0
			ts.add(ts.first + "." + text)
			return
		}
		if t.kind == tkWord && ts.keyword(text) {
			return
		}
		if ts.want {
			ts.want, ts.part, ts.first = false, 1, text
		}
	default:
		ts.want = false
		ts.part = 0
	}
}

// keyword handles the words that open or close a FROM list, reporting
// whether text was one of them.
func (ts *tableScan) keyword(text string) bool {
	b := bit(ts.depth)
	switch len(text) {
	case 4:
		switch {
		case equalFold(text, "FROM"):
			if ts.selects&b != 0 {
				ts.froms |= b
				ts.want = true
			}
			return true
		case equalFold(text, "JOIN"):
			ts.want = ts.froms&b != 0
			return true
		case equalFold(text, "DUAL"):
			ts.want = false
			return true
		}
	case 6:
		if equalFold(text, "SELECT") {
			ts.selects |= b
			ts.froms &^= b
			ts.want = false
			return true
		}
	case 7:
		if equalFold(text, "LATERAL") {
			return true // JOIN LATERAL (…): a derived table follows
		}
	case 13:
		if equalFold(text, "STRAIGHT_JOIN") {
			ts.want = ts.froms&b != 0
			return true
		}
	}
	if ts.froms&b == 0 || ts.want {
		return false
	}
	switch {
	case equalFold(text, "WHERE"), equalFold(text, "GROUP"), equalFold(text, "HAVING"),
		equalFold(text, "ORDER"), equalFold(text, "LIMIT"), equalFold(text, "WINDOW"),
		equalFold(text, "UNION"), equalFold(text, "INTERSECT"), equalFold(text, "EXCEPT"),
		equalFold(text, "INTO"), equalFold(text, "RETURNING"), equalFold(text, "QUALIFY"):
		ts.froms &^= b
		return true
	}
	return false
}

// done ends the statement: a name pending at its end is a table.
func (ts *tableScan) done() {
	if ts.part == 1 {
		ts.add(ts.first)
	}
	ts.part = 0
}

// add records a table name, lower case, once.
func (ts *tableScan) add(name string) {
	if name = strings.ToLower(name); !slices.Contains(ts.names, name) {
		ts.names = append(ts.names, name)
	}
}

// unquote strips an identifier's quotes (`…` or "…"), undoubling them.
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	q := s[:1]
	s = s[1 : len(s)-1]
	if strings.Contains(s, q+q) {
		s = strings.ReplaceAll(s, q+q, q)
	}
	return s
}
