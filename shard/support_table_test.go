package shard

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The README's table of SQL shapes against ShardingSphere stays true:
// every row's example routes, or is refused, as its rwshard column says.
func TestSupportTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start, end := strings.Index(text, "<!-- support-table -->"), strings.Index(text, "<!-- /support-table -->")
	if start < 0 || end < start {
		t.Fatal("README.md: no support table")
	}
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	rows := 0
	for _, line := range strings.Split(text[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[2]), "`") {
			continue
		}
		shape := strings.TrimSpace(cells[1])
		sql := strings.Trim(strings.TrimSpace(cells[2]), "`")
		want := strings.TrimSpace(cells[4])
		rows++
		cols := ColumnSourceFunc(func(context.Context, string) ([]string, error) {
			return []string{"user_id", "order_id", "status"}, nil
		})
		_, err := r.RouteContext(context.Background(), sql, nil, cols)
		switch {
		case strings.HasPrefix(want, "routes") && err != nil:
			t.Errorf("%s: README says %q, got %v", shape, want, err)
		case strings.HasPrefix(want, "refused") && err == nil:
			t.Errorf("%s: README says %q, but %q routes", shape, want, sql)
		case !strings.HasPrefix(want, "routes") && !strings.HasPrefix(want, "refused"):
			t.Errorf("%s: rwshard column %q says neither routes nor refused", shape, want)
		}
	}
	if rows < 15 {
		t.Fatalf("support table has %d rows", rows)
	}
}
