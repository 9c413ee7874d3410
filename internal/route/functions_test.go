package route

import (
	"reflect"
	"testing"
)

func TestClassifyFunctions(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"SELECT f(1)", []string{"f"}},
		{"SELECT shop.Refund(1), g (2) FROM t", []string{"refund", "g"}},
		{"SELECT `f`(1), f(2)", []string{"f"}},
		{"SELECT COUNT(*), NOW(), JSON_EXTRACT(doc, '$.a'), IFNULL(a, 0) FROM t", nil},
		{"SELECT CAST(a AS CHAR(10)), CONVERT(b, DECIMAL(10, 2)) FROM t", nil},
		{"SELECT * FROM t USE INDEX (i) WHERE id IN (1, 2) AND EXISTS (SELECT 1)", nil},
		{"SELECT a FROM t JOIN (SELECT 1 AS a) x USING (a) WHERE (a > 1) OR (a < 0)", nil},
		{"SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) FROM t", nil},
		{"SELECT a FROM t WHERE MATCH (a) AGAINST ('x')", nil},
		{"SELECT 1; SELECT h(1)", []string{"h"}},
		{"WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r", nil},
		{"WITH a AS (SELECT 1), b (x) AS (SELECT 2) SELECT * FROM a, b", nil},
		{"SELECT * FROM (SELECT 1, 2) AS d (x, y)", nil},
	} {
		c, err := Classify(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Functions, tc.want) {
			t.Errorf("Classify(%q).Functions = %q, want %q", tc.sql, c.Functions, tc.want)
		}
		if c.Kind != Read {
			t.Errorf("Classify(%q).Kind = %v: the kind is the driver's to narrow", tc.sql, c.Kind)
		}
	}
}
