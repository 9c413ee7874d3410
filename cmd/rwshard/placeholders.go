package main

import "strings"

// countPlaceholders counts the ? placeholders of a statement as the
// server's lexer sees them: not inside string literals ('…', "…", with
// backslash escapes and doubled quotes), backquoted identifiers (`…`,
// doubled backquotes), or comments: /* … */, # to the end of the line, and
// -- to the end of the line when a space, a control character or the end
// follows the dashes (as MySQL requires: 1--? is 1 - -?). The content of an
// executable comment, /*! … */ or MariaDB's /*M! … */, is code and counts.
// Anything left unterminated runs to the end.
func countPlaceholders(sql string) int {
	n := 0
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '?':
			n++
		case c == '\'' || c == '"' || c == '`':
			i = closing(sql, i+1, c)
		case c == '#':
			i = lineEnd(sql, i)
		case c == '-' && strings.HasPrefix(sql[i:], "--") && (i+2 == len(sql) || sql[i+2] <= ' '):
			i = lineEnd(sql, i)
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if strings.HasPrefix(sql[i:], "/*!") || strings.HasPrefix(sql[i:], "/*M!") {
				i++ // executable: scan the content as code; */ counts nothing
				continue
			}
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return n
			}
			i += 2 + end + 1
		}
	}
	return n
}

// closing returns the index of the quote q that closes the literal or
// identifier whose content starts at i, or len(sql)-1 if none does.
// Inside backquotes only a doubled backquote escapes; inside quotes a
// backslash escapes too.
func closing(sql string, i int, q byte) int {
	for ; i < len(sql); i++ {
		switch sql[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			if i+1 < len(sql) && sql[i+1] == q {
				i++
				continue
			}
			return i
		}
	}
	return len(sql) - 1
}

// lineEnd returns the index of the newline ending the line at i, or
// len(sql)-1.
func lineEnd(sql string, i int) int {
	if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(sql) - 1
}
