package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCountPlaceholders(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want int
	}{
		{"", 0},
		{"SELECT 1", 0},
		{"SELECT ?", 1},
		{"SELECT * FROM t WHERE a = ? AND b IN (?, ?)", 3},
		{"SELECT a?b", 1},
		{"SELECT '?', \"?\", `?`", 0},
		{`SELECT 'it''s ?', ?`, 1},
		{`SELECT 'a\'?', ?`, 1},
		{`SELECT "a\"?"" ?", ?`, 1},
		{`SELECT 'a\\', ?`, 1},
		{"SELECT `a``?` FROM t WHERE x = ?", 1},
		{"SELECT `a\\` , ?", 1}, // no backslash escape in an identifier
		{"SELECT /* ? */ ?", 1},
		{"/* rwshard:primary */ SELECT ? /* ?", 1},
		{"SELECT ? -- ?\n, ?", 2},
		{"SELECT ? --\t?\n, ?", 2},
		{"SELECT ? --", 1},
		{"SELECT 1--?", 1}, // 1 - -?: no space after the dashes
		{"SELECT ? # ?\n, ?", 2},
		{"SELECT ? # ?", 1},
		{"SELECT /*! ? */ 1", 1},
		{"SELECT /*M!100100 ? */ 1", 1},
		{"SELECT /*!50000 '?' */ ?", 1},
		{"SELECT 'unterminated ?", 0},
		{"SELECT `unterminated ?", 0},
		{"SELECT \"a\" ? 'b'", 1},
		{"INSERT INTO t (a, b) VALUES (?, ?) ON DUPLICATE KEY UPDATE b = ?", 3},
		{"SELECT ? /**/ ?", 2},
		{"SELECT ?/*/ ? */?", 2},
	} {
		assert.Equal(t, tc.want, countPlaceholders(tc.sql), "%q", tc.sql)
	}
}

// FuzzPlaceholders: the counter never panics, counts no more than the ?
// in the text, 0 without any, and every ? in a text without quotes or
// comment openers.
func FuzzPlaceholders(f *testing.F) {
	for _, s := range []string{"SELECT ?", "SELECT '?' -- ?\n?", "/* ? */ `?` \"?\" # ?\n?", "'\\", "--", "/*", "/*!?*/", "1--?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		n := countPlaceholders(sql)
		all := strings.Count(sql, "?")
		if n < 0 || n > all {
			t.Fatalf("countPlaceholders(%q) = %d, want 0..%d", sql, n, all)
		}
		if all == 0 && n != 0 {
			t.Fatalf("countPlaceholders(%q) = %d without a ?", sql, n)
		}
		if !strings.ContainsAny(sql, "'\"`#") && !strings.Contains(sql, "--") && !strings.Contains(sql, "/*") && n != all {
			t.Fatalf("countPlaceholders(%q) = %d, want every ?: %d", sql, n, all)
		}
	})
}
