// Package redact keeps data and secrets out of what rwshard shows: SQL in
// errors, route logs, Explain output and the CLI has the contents of its
// string literals replaced, so that IDENTIFIED BY '…' or a customer's
// e-mail never reach a log. The driver and the sharding module share it.
package redact

import "strings"

// Literals replaces the contents of quoted string literals with "?"
// ('secret' → '?'), so that SQL quoted in errors and logs never shows a
// password (CREATE USER … IDENTIFIED BY '…', CHANGE MASTER … PASSWORD='…')
// or other data. Identifiers in backquotes are kept.
func Literals(sql string) string { return literals(sql, false) }

// ErrorText redacts a server's error message for a log: the statement a
// syntax error quotes (near '…' at line N) goes whole, and the quoted
// values (Duplicate entry '…') as in Literals, while the apostrophes of
// the message's own words (Can't, doesn't) stay as they are.
func ErrorText(msg string) string {
	if i := strings.Index(msg, "near '"); i >= 0 {
		if j := strings.LastIndex(msg, "' at line "); j > i {
			msg = msg[:i+len("near '")] + "?" + msg[j:]
		}
	}
	return literals(msg, true)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func literals(sql string, prose bool) string {
	if strings.IndexAny(sql, `'"`) < 0 {
		return sql
	}
	var b strings.Builder
	b.Grow(len(sql))
	for i := 0; i < len(sql); i++ {
		ch := sql[i]
		if ch == '`' { // identifier: copy through the closing backquote
			j := strings.IndexByte(sql[i+1:], '`')
			if j < 0 {
				b.WriteString(sql[i:])
				return b.String()
			}
			b.WriteString(sql[i : i+j+2])
			i += j + 1
			continue
		}
		if ch != '\'' && ch != '"' ||
			prose && ch == '\'' && i > 0 && isLetter(sql[i-1]) && i+1 < len(sql) && isLetter(sql[i+1]) {
			b.WriteByte(ch) // in prose, an apostrophe: doesn't
			continue
		}
		b.WriteByte(ch)
		b.WriteByte('?')
		// Skip to the closing quote: backslash escapes, doubled quotes.
		j := i + 1
		for ; j < len(sql); j++ {
			if sql[j] == '\\' {
				j++
				continue
			}
			if sql[j] == ch {
				if j+1 < len(sql) && sql[j+1] == ch {
					j++
					continue
				}
				break
			}
		}
		if j >= len(sql) { // unterminated: nothing more is shown
			return b.String()
		}
		b.WriteByte(ch)
		i = j
	}
	return b.String()
}

// maxQuoted is how much of a statement Quote keeps.
const maxQuoted = 80

// Quote shortens a statement for an error message, its string literals
// redacted.
func Quote(sql string) string {
	sql = Literals(strings.TrimSpace(sql))
	if len(sql) <= maxQuoted {
		return sql
	}
	cut := maxQuoted
	for cut > 0 && sql[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return sql[:cut] + "…"
}
