package redact

import (
	"strings"
	"testing"
)

func TestLiterals(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"CREATE USER x IDENTIFIED BY 'secret'", "CREATE USER x IDENTIFIED BY '?'"},
		{`SELECT "a\"b", 'it''s', c FROM t`, `SELECT "?", '?', c FROM t`},
		{"SELECT `col'x` FROM t WHERE a = 'x'", "SELECT `col'x` FROM t WHERE a = '?'"},
		{"SELECT 'unterminated", "SELECT '?"},
	} {
		if got := Literals(tc.in); got != tc.want {
			t.Errorf("Literals(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	long := "SELECT '" + strings.Repeat("x", 200) + "', " + strings.Repeat("é", 60)
	q := Quote(long)
	if strings.Contains(q, "xx") || !strings.HasSuffix(q, "…") || len(q) > maxQuoted+len("…") {
		t.Errorf("Quote = %q", q)
	}
	if !strings.HasPrefix(Quote("  SELECT 1  "), "SELECT 1") {
		t.Errorf("Quote trims: %q", Quote("  SELECT 1  "))
	}
}

// FuzzLiterals: nothing of a literal's content survives, whatever text
// stands around it.
func FuzzLiterals(f *testing.F) {
	f.Add("SELECT * FROM t WHERE p = ", "secret", " AND 1", false)
	f.Add("CREATE USER u IDENTIFIED BY ", "it''s \\' hidden", "", true)
	f.Fuzz(func(t *testing.T, before, secret, after string, double bool) {
		q := "'"
		if double {
			q = `"`
		}
		plain := func(s string) bool { return !strings.ContainsAny(s, "'\"`\\\x01") }
		if !plain(before) || !plain(after) || strings.Contains(secret, "\x01") {
			return
		}
		// The secret as a literal body: backslashes escaped, quotes
		// doubled.
		body := strings.ReplaceAll(strings.ReplaceAll(secret, "\\", "\\\\"), q, q+q)
		sql := before + q + "\x01" + body + "\x01" + q + after
		if out := Literals(sql); strings.Contains(out, "\x01") {
			t.Fatalf("Literals(%q) = %q: the literal survived", sql, out)
		}
	})
}
