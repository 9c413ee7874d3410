package rwshard

import "strings"

// redactLiterals replaces the contents of quoted string literals with "?"
// ('secret' → '?'), so that SQL quoted in errors and logs never shows a
// password (CREATE USER … IDENTIFIED BY '…', CHANGE MASTER … PASSWORD='…')
// or other data. Identifiers in backquotes are kept.
func redactLiterals(sql string) string {
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
		if ch != '\'' && ch != '"' {
			b.WriteByte(ch)
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
