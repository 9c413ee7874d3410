package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTables(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"SELECT * FROM report_daily", []string{"report_daily"}},
		{"select * from Report_Daily r where r.day = ?", []string{"report_daily"}},
		{"SELECT * FROM audit.events e JOIN `app`.`Users` u ON u.id = e.uid", []string{"audit.events", "app.users"}},
		{"SELECT * FROM a, b AS x, c y WHERE a.id = x.id", []string{"a", "b", "c"}},
		{"SELECT * FROM a LEFT OUTER JOIN b USING (id) STRAIGHT_JOIN c ON c.k = b.k, d", []string{"a", "b", "c", "d"}},
		{"SELECT * FROM (a JOIN b ON a.x = b.x)", []string{"a", "b"}},
		{"SELECT * FROM t PARTITION (p0, p1) USE INDEX (i), u", []string{"t", "u"}},
		{"SELECT (SELECT MAX(x) FROM t2) FROM t1 WHERE id IN (SELECT id FROM t3)", []string{"t2", "t1", "t3"}},
		{"SELECT * FROM (SELECT id FROM inner_t) AS d JOIN LATERAL (SELECT 1 FROM lat) l", []string{"inner_t", "lat"}},
		{"WITH r AS (SELECT * FROM report_daily) SELECT * FROM r", []string{"report_daily", "r"}},
		{"SELECT EXTRACT(YEAR FROM created_at), TRIM(LEADING 'x' FROM name) FROM orders", []string{"orders"}},
		{"SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (n INT PATH '$')) AS j", nil},
		{"SELECT 1 FROM DUAL", nil},
		{"SELECT 1", nil},
		{"SELECT * FROM a WHERE x = 1 UNION SELECT * FROM b ORDER BY 1", []string{"a", "b"}},
		{"SELECT * FROM a; SELECT * FROM b, a", []string{"a", "b"}},
		{"SELECT * FROM `we``ird`", []string{"we`ird"}},
		{"/* FROM nothing */ SELECT 'FROM x' FROM t -- FROM y\n", []string{"t"}},
		{"SELECT a FROM t WHERE b = 1, c", []string{"t"}},
		{"SHOW COLUMNS FROM t", nil},
	} {
		assert.Equal(t, tc.want, Tables(tc.sql), tc.sql)
	}
}

// The tag function runs once per text while it stays cached, and its
// value comes back with every hit; a malformed hint is not tagged.
func TestTaggingClassifier(t *testing.T) {
	calls := 0
	c := NewTaggingClassifier(0, func(sql string, cls Class) int {
		calls++
		if cls.Kind != Read {
			return 0
		}
		return len(Tables(sql))
	})
	for range 3 {
		cls, err := c.Classify("SELECT * FROM a JOIN b ON a.id = b.id")
		assert.NoError(t, err)
		assert.Equal(t, 2, cls.Tag)
	}
	assert.Equal(t, 1, calls, "tagged once")
	cls, _ := c.Classify("UPDATE a SET x = 1")
	assert.Equal(t, 0, cls.Tag)
	_, err := c.Classify("/* rwshard:bogus */ SELECT * FROM a")
	assert.Error(t, err)
	assert.Equal(t, 2, calls, "a malformed hint is not tagged")
	plain, _ := NewClassifier(0).Classify("SELECT * FROM a")
	assert.Equal(t, 0, plain.Tag, "no tag function, no tag")
}
