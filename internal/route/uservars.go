package route

import (
	"slices"
	"strings"
)

// User variables as session commands. A user variable lives on one server
// connection; the driver records the values a logical connection gives
// its user variables and applies them to every backend connection it uses
// (ReplayableSet for literals, AssignedUserVars for expressions whose
// values it reads back), so that reads that use them can run on replicas.

// userVarName is a user variable token's name as the driver sets it:
// lower case when unquoted (user variable names are case-insensitive),
// the token as written when quoted.
func userVarName(tok string) string {
	if len(tok) > 1 && (tok[1] == '\'' || tok[1] == '"' || tok[1] == '`') {
		return tok
	}
	return strings.ToLower(tok)
}

// AssignedVars reports whether sql is a single statement whose only
// session effect is assigning user variables (SET @v = expr, …;
// SELECT … @v := …; SELECT … INTO @v, …), or session variables that
// change what reads return (see ReplayableSet), from expressions
// (SET sql_mode = CONCAT(@@sql_mode, …)), and returns their names, each
// once: a user variable's as userVarName has it, a session variable's as
// @@name, lower case. Anything it cannot account for is false, and the
// statement pins, the safe side.
func AssignedVars(sql string) ([]string, bool) {
	var l lexer
	l.reset(sql, reading{}, true)
	var names []string
	add := func(t token) {
		n := userVarName(sql[t.start:t.end])
		for _, x := range names {
			if x == n {
				return
			}
		}
		names = append(names, n)
	}
	word := func(t token, w string) bool { return t.kind == tkWord && equalFold(sql[t.start:t.end], w) }
	first := true
	set, target, into := false, false, false
	depth := 0
	var prev token
	for {
		t := l.next()
		switch {
		case t.kind == tkEOF:
			ok := len(names) > 0 && !l.takeBad() && l.nvkeys == 0 && !l.sawMaria
			return names, ok
		case t.kind == tkSemi:
			if t = l.next(); t.kind != tkEOF {
				return nil, false // several statements
			}
			continue
		case first && word(t, "SET"):
			set, target = true, true
		case first && !word(t, "SELECT"):
			return nil, false // a statement that may change data besides
		case target:
			// an assignment's target: a user variable, or a session
			// variable whose value a read sees
			switch {
			case t.kind == tkUserVar:
				add(t)
			case word(t, "SESSION") || word(t, "LOCAL"):
				continue // the next token is the target
			case t.kind == tkWord || t.kind == tkSysVar:
				name := strings.ToLower(strings.Trim(sql[t.start:t.end], "`"))
				name = strings.TrimPrefix(name, "@@")
				name = strings.TrimPrefix(strings.TrimPrefix(name, "session."), "local.")
				if !replayVars[name] {
					return nil, false
				}
				if !slices.Contains(names, "@@"+name) {
					names = append(names, "@@"+name)
				}
			default:
				return nil, false
			}
			target = false
		case set && depth == 0 && t.kind == tkComma:
			target = true
		case t.kind == tkAssign && prev.kind == tkUserVar:
			add(prev)
		case word(t, "INTO"):
			into = true
		case into && t.kind == tkUserVar:
			add(t)
		case into && t.kind == tkComma:
		case t.kind == tkLParen:
			depth++
			into = false
		case t.kind == tkRParen:
			depth--
			into = false
		default:
			into = false
		}
		first = false
		prev = t
	}
}
