package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTemporaryTables(t *testing.T) {
	for _, c := range []struct {
		sql    string
		names  []string
		create bool
	}{
		{"CREATE TEMPORARY TABLE t (a INT)", []string{"t"}, true},
		{"create or replace temporary table `My T` select 1", []string{"my t"}, true},
		{"CREATE TEMPORARY TABLE IF NOT EXISTS app.t LIKE u", []string{"t"}, true},
		{"DROP TEMPORARY TABLE t", []string{"t"}, false},
		{"DROP TEMPORARY TABLE IF EXISTS t, app.u", []string{"t", "u"}, false},
		{"CREATE TABLE t (a INT)", nil, false},
		{"DROP TABLE t", nil, false},
		{"SELECT 1", nil, false},
	} {
		names, create, ok := TemporaryTables(c.sql)
		assert.Equal(t, c.names != nil, ok, "%q", c.sql)
		assert.Equal(t, c.names, names, "%q", c.sql)
		assert.Equal(t, c.create, create, "%q", c.sql)
	}
	assert.True(t, Mentions("SELECT a FROM x JOIN `T` ON 1", []string{"t"}))
	assert.True(t, Mentions("SELECT (SELECT COUNT(*) FROM app.t) AS n", []string{"t"}))
	assert.False(t, Mentions("SELECT 't' FROM u", []string{"t"}))
}
