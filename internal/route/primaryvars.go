package route

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

// replayVars are the session system variables that change what a plain
// read returns, and that rwshard applies to every backend connection a
// logical connection uses (see ReplayableSet) rather than pinning it: the
// time zone, the SQL mode, the character sets and collation, and the
// per-session limits and formats a read sees. A variable not listed pins.
var replayVars = map[string]bool{
	"time_zone":                true,
	"sql_mode":                 true,
	"character_set_client":     true,
	"character_set_connection": true,
	"character_set_results":    true,
	"collation_connection":     true,
	"lc_time_names":            true,
	"lc_messages":              true,
	"group_concat_max_len":     true,
	"div_precision_increment":  true,
	"default_week_format":      true,
	"max_execution_time":       true, // MySQL
	"max_statement_time":       true, // MariaDB
	"sql_select_limit":         true,
	"max_join_size":            true,
	"sql_big_selects":          true,
	"sql_auto_is_null":         true,
	"cte_max_recursion_depth":  true,
	"max_recursive_iterations": true,
	"max_sort_length":          true,
	"optimizer_search_depth":   true,
	"long_query_time":          true,
}

// PrimaryOnlySet reports whether sql is a single SET statement that sets
// only session variables of primaryOnlyVars (FOREIGN_KEY_CHECKS,
// transaction isolation, lock wait timeouts, …) to literal values, or
// SET SESSION TRANSACTION …. Such a statement need not pin the logical
// connection: its effect matters only on the primary connection, which
// the logical connection keeps. Anything it cannot prove is false (and
// pins, the safe side).
func PrimaryOnlySet(sql string) bool {
	return parseSet(sql, primaryOnlyVars, true, nil)
}

// Assignment is a session system variable, or a user variable (its name
// starting with @), set to a literal value: Name in lower case, Value as
// the SQL wrote it ('+00:00', 1, DEFAULT).
type Assignment struct{ Name, Value string }

// ReplayableSet reports whether sql is a single SET statement that sets
// only session variables of replayVars (time_zone, sql_mode, the
// character sets of SET NAMES, …) and user variables (@v, named as
// userVarName has them) to literal values, and returns the assignments
// in order. SET NAMES cs [COLLATE c] is returned as the three
// character_set_* variables it sets (and collation_connection). Such
// settings can be applied to every backend connection the logical
// connection uses, replicas included, instead of pinning it; anything
// ReplayableSet cannot prove is false (and pins).
func ReplayableSet(sql string) ([]Assignment, bool) {
	var out []Assignment
	if !parseSet(sql, replayVars, false, &out) {
		return nil, false
	}
	return out, true
}

// parseSet reads a single SET statement whose every assignment sets a
// session variable named in allowed to a literal; tx allows SET SESSION
// TRANSACTION …, names SET NAMES. Assignments are appended to out when it
// is not nil (SET NAMES only then).
func parseSet(sql string, allowed map[string]bool, tx bool, out *[]Assignment) bool {
	var l lexer
	l.reset(sql, reading{}, true) // records versioned comments: refused below
	t := l.next()
	word := func(t token, w string) bool { return t.kind == tkWord && equalFold(sql[t.start:t.end], w) }
	if !word(t, "SET") {
		return false
	}
	// literal reads a value: a number (signed), a string or a word.
	literal := func() (string, bool) {
		t := l.next()
		start := t.start
		if t.kind == tkOp && (sql[t.start:t.end] == "-" || sql[t.start:t.end] == "+") {
			t = l.next()
		}
		if t.kind != tkNumber && t.kind != tkString && t.kind != tkWord {
			return "", false // a variable, an expression, a subquery: not a literal
		}
		return sql[start:t.end], true
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
			if !tx || !session || !transactionCharacteristics(&l, sql) {
				return false // SET TRANSACTION alone is for the next transaction only
			}
			t = l.next()
			goto next
		case word(t, "NAMES") && out != nil && !session:
			cs, ok := literal()
			if !ok {
				return false
			}
			for _, v := range []string{"character_set_client", "character_set_connection", "character_set_results"} {
				*out = append(*out, Assignment{v, cs})
			}
			if t = l.next(); word(t, "COLLATE") {
				c, ok := literal()
				if !ok {
					return false
				}
				*out = append(*out, Assignment{"collation_connection", c})
				t = l.next()
			}
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
		case t.kind == tkUserVar && out != nil && !session:
			name = userVarName(sql[t.start:t.end]) // replayed as a session variable is
		default:
			return false // something else
		}
		if name[0] != '@' {
			name = strings.ToLower(strings.Trim(name, "`"))
			if !allowed[name] {
				return false
			}
		}
		if t = l.next(); t.kind != tkEq && t.kind != tkAssign {
			return false
		}
		if v, ok := literal(); !ok {
			return false
		} else if out != nil {
			*out = append(*out, Assignment{name, v})
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
