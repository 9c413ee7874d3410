package route

import "strings"

// Temporary tables. A temporary table lives on the server connection that
// created it: the driver keeps the names a logical connection created and
// sends the statements that mention one to the connection that has it.

// TemporaryTables reads a CREATE [OR REPLACE] TEMPORARY TABLE [IF NOT
// EXISTS] t … or DROP TEMPORARY TABLE [IF EXISTS] t[, u …] statement:
// the tables' names (lower case, unquoted, without their schema) and
// whether it creates them. ok is false for anything else, or a form it
// cannot read.
func TemporaryTables(sql string) (names []string, create, ok bool) {
	var l lexer
	l.reset(sql, reading{}, false)
	word := func(t token, w string) bool { return t.kind == tkWord && equalFold(sql[t.start:t.end], w) }
	t := l.next()
	switch {
	case word(t, "CREATE"):
		create = true
		if t = l.next(); word(t, "OR") {
			if !word(l.next(), "REPLACE") {
				return nil, false, false
			}
			t = l.next()
		}
	case word(t, "DROP"):
		t = l.next()
	default:
		return nil, false, false
	}
	if !word(t, "TEMPORARY") || !word(l.next(), "TABLE") {
		return nil, false, false
	}
	t = l.next()
	if word(t, "IF") {
		if create {
			if !word(l.next(), "NOT") {
				return nil, false, false
			}
		}
		if !word(l.next(), "EXISTS") {
			return nil, false, false
		}
		t = l.next()
	}
	for {
		name, next, good := tableName(&l, sql, t)
		if !good {
			return nil, false, false
		}
		names = append(names, name)
		if create || next.kind != tkComma {
			return names, create, true
		}
		t = l.next()
	}
}

// tableName reads a possibly qualified table name starting at t and
// returns its last part and the token after it.
func tableName(l *lexer, sql string, t token) (string, token, bool) {
	var name string
	for {
		switch t.kind {
		case tkWord:
			name = sql[t.start:t.end]
		case tkQuoted:
			name = unquote(sql[t.start:t.end])
		default:
			return "", t, false
		}
		next := l.next()
		if next.kind != tkDot {
			return strings.ToLower(name), next, true
		}
		t = l.next()
	}
}

// Mentions reports whether sql names any of tables (lower case) as an
// identifier, whatever the clause.
func Mentions(sql string, tables []string) bool {
	var l lexer
	l.reset(sql, reading{}, false)
	for {
		t := l.next()
		var name string
		switch t.kind {
		case tkEOF:
			return false
		case tkWord:
			name = sql[t.start:t.end]
		case tkQuoted:
			name = unquote(sql[t.start:t.end])
		default:
			continue
		}
		for _, tb := range tables {
			if strings.EqualFold(name, tb) {
				return true
			}
		}
	}
}
