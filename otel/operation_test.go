package otel

import "testing"

func TestOperation(t *testing.T) {
	for q, want := range map[string]string{
		"select 1":                         "SELECT",
		"  /* rwshard:primary */ UPDATE t": "UPDATE",
		"(SELECT 1) UNION (SELECT 2)":      "SELECT",
		"-- c\nDELETE FROM t":              "DELETE",
		"# c\ninsert into t values (1)":    "INSERT",
		"/* unterminated":                  "",
		"":                                 "",
		"123":                              "",
	} {
		if got := operation(q); got != want {
			t.Errorf("operation(%q) = %q, want %q", q, got, want)
		}
	}
}
