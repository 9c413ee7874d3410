package router

import "strings"

// primaryOnlyVars are the session system variables that change what
// statements run on the primary do (writes, transactions, locks) but not
// what a plain read in autocommit returns. Setting them keeps the logical
// connection on its primary connection for the statements they affect,
// without pinning its reads there (see PrimaryState).
var primaryOnlyVars = map[string]bool{
	"foreign_key_checks":       true,
	"unique_checks":            true,
	"check_constraint_checks":  true,
	"sql_safe_updates":         true,
	"innodb_strict_mode":       true,
	"innodb_lock_wait_timeout": true,
	"lock_wait_timeout":        true,
	"transaction_isolation":    true,
	"tx_isolation":             true,
	"transaction_read_only":    true,
	"tx_read_only":             true,
	"auto_increment_increment": true,
	"auto_increment_offset":    true,
	"sql_notes":                true,
	"sql_warnings":             true,
	"wait_timeout":             true,
	"interactive_timeout":      true,
	"net_read_timeout":         true,
	"net_write_timeout":        true,
}

// PrimaryOnlySet reports whether sql is a single SET statement that sets
// only session variables of primaryOnlyVars (FOREIGN_KEY_CHECKS,
// transaction isolation, lock wait timeouts, …) to literal values, or
// SET SESSION TRANSACTION …. Such a statement need not pin the logical
// connection: its effect matters only on the primary connection, which
// the logical connection keeps. Anything it cannot prove is false (and
// pins, the safe side).
func PrimaryOnlySet(sql string) bool {
	var l lexer
	l.reset(sql, reading{}, true) // records versioned comments: refused below
	t := l.next()
	word := func(t token, w string) bool { return t.kind == tkWord && equalFold(sql[t.start:t.end], w) }
	if !word(t, "SET") {
		return false
	}
	n := 0
	for {
		t = l.next()
		session := false
		if word(t, "SESSION") || word(t, "LOCAL") {
			session = true
			t = l.next()
		}
		var name string
		switch {
		case word(t, "TRANSACTION"):
			if !session || !transactionCharacteristics(&l, sql) {
				return false // SET TRANSACTION alone is for the next transaction only
			}
			t = l.next()
			goto next
		case t.kind == tkWord:
			name = sql[t.start:t.end]
		case t.kind == tkSysVar:
			name = sql[t.start+2 : t.end]
			if i := strings.IndexByte(name, '.'); i >= 0 {
				scope := strings.ToLower(name[:i])
				if scope != "session" && scope != "local" {
					return false // @@global.…
				}
				name = name[i+1:]
			}
		default:
			return false // a user variable, or something else
		}
		if !primaryOnlyVars[strings.ToLower(strings.Trim(name, "`"))] {
			return false
		}
		if t = l.next(); t.kind != tkEq && t.kind != tkAssign {
			return false
		}
		t = l.next()
		if t.kind == tkOp && (sql[t.start:t.end] == "-" || sql[t.start:t.end] == "+") {
			t = l.next()
		}
		if t.kind != tkNumber && t.kind != tkString && t.kind != tkWord {
			return false // a variable, an expression, a subquery: not a literal
		}
		t = l.next()
	next:
		n++
		switch t.kind {
		case tkComma:
			continue
		case tkSemi:
			t = l.next()
		}
		return t.kind == tkEOF && n > 0 && !l.takeBad() && l.nvkeys == 0 && !l.sawMaria && !l.sawBackslashQuote && !l.sawBackslashDQuote
	}
}

// transactionCharacteristics reads ISOLATION LEVEL … and READ ONLY|WRITE,
// comma-separated, after SET SESSION TRANSACTION; the lexer stands after
// the last word it read.
func transactionCharacteristics(l *lexer, sql string) bool {
	word := func(t token, w string) bool { return t.kind == tkWord && equalFold(sql[t.start:t.end], w) }
	for {
		t := l.next()
		switch {
		case word(t, "ISOLATION"):
			if !word(l.next(), "LEVEL") {
				return false
			}
			t = l.next()
			switch {
			case word(t, "SERIALIZABLE"):
			case word(t, "REPEATABLE"):
				if !word(l.next(), "READ") {
					return false
				}
			case word(t, "READ"):
				if t = l.next(); !word(t, "COMMITTED") && !word(t, "UNCOMMITTED") {
					return false
				}
			default:
				return false
			}
		case word(t, "READ"):
			if t = l.next(); !word(t, "ONLY") && !word(t, "WRITE") {
				return false
			}
		default:
			return false
		}
		save := l.pos
		if t = l.next(); t.kind != tkComma {
			l.pos = save // the caller reads what follows
			return true
		}
	}
}
