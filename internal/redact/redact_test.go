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

func TestErrorText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Error 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near 'USERR x IDENTIFIED BY 'secret'' at line 1",
			"Error 1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '?' at line 1"},
		{"Error 1062 (23000): Duplicate entry 'ada@example.com' for key 'email'", "Error 1062 (23000): Duplicate entry '?' for key '?'"},
		{"Error 1146 (42S02): Table 'app.t' doesn't exist", "Error 1146 (42S02): Table '?' doesn't exist"},
		{"Can't connect: isn't it", "Can't connect: isn't it"},
	} {
		if got := ErrorText(tc.in); got != tc.want {
			t.Errorf("ErrorText(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
