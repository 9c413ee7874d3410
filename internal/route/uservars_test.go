package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAssignedVars(t *testing.T) {
	for _, c := range []struct {
		sql   string
		names []string
	}{
		{"SET @a = NOW()", []string{"@a"}},
		{"SET @A = 1 + 2, @b := (SELECT MAX(id) FROM t)", []string{"@a", "@b"}},
		{"SELECT @x := 1", []string{"@x"}},
		{"SELECT @x := id, @y := name FROM t WHERE id = 1", []string{"@x", "@y"}},
		{"SELECT id, name INTO @i, @n FROM t LIMIT 1", []string{"@i", "@n"}},
		{"SELECT @`a b` := 1", []string{"@`a b`"}},
		{"SELECT @x := @x + 1 FROM t", []string{"@x"}},
		{"SET @a = 1;", []string{"@a"}},
		{"SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')", []string{"@@sql_mode"}},
		{"SET @@session.time_zone = @tz, @a = NOW()", []string{"@@time_zone", "@a"}},
		{"SET SESSION sql_mode = ''", []string{"@@sql_mode"}},
		// Anything else: pinned.
		{"SET foreign_key_checks = @fk", nil},
		{"SET @@global.sql_mode = ''", nil},
		{"INSERT INTO t SELECT @a := 1", nil},
		{"UPDATE t SET a = (@x := a + 1)", nil},
		{"SET NAMES utf8mb4", nil},
		{"SELECT @x := 1; SELECT 2", nil},
		{"SELECT 1", nil},
		{"SELECT @x", nil},
		{"SELECT /*!50000 @x := 1 */", nil},
	} {
		got, ok := AssignedVars(c.sql)
		assert.Equal(t, c.names != nil, ok, "%q", c.sql)
		if c.names != nil {
			assert.Equal(t, c.names, got, "%q", c.sql)
		}
	}
}

func TestReplayableUserVars(t *testing.T) {
	type a = Assignment
	for _, c := range []struct {
		sql string
		as  []Assignment
	}{
		{"SET @a = 1", []a{{"@a", "1"}}},
		{"SET @A := 'x', time_zone = '+00:00'", []a{{"@a", "'x'"}, {"time_zone", "'+00:00'"}}},
		{"SET @a = -2.5, @`b` = NULL", []a{{"@a", "-2.5"}, {"@`b`", "NULL"}}},
		{"SET @a = NOW()", nil},
		{"SET @a = @b", nil},
	} {
		got, ok := ReplayableSet(c.sql)
		assert.Equal(t, c.as != nil, ok, "%q", c.sql)
		assert.Equal(t, c.as, got, "%q", c.sql)
	}
}
