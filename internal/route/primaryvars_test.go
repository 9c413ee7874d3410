package route

import (
	"slices"
	"testing"
)

func TestPrimaryOnlySet(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SET FOREIGN_KEY_CHECKS = 0", true},
		{"SET FOREIGN_KEY_CHECKS = 1;", true},
		{"set foreign_key_checks=0, unique_checks = 0", true},
		{"SET SESSION innodb_lock_wait_timeout = 5", true},
		{"SET @@session.lock_wait_timeout = 10", true},
		{"SET @@foreign_key_checks := 0", true},
		{"SET SESSION TRANSACTION READ ONLY", true},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", true},
		{"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ WRITE", true},
		{"/* gorm */ SET FOREIGN_KEY_CHECKS = 0", true},
		{"SET tx_isolation = 'READ-COMMITTED'", true},
		{"SET auto_increment_offset = -1", true},
		{"SET TRANSACTION READ ONLY", false}, // the next transaction only
		{"SET GLOBAL foreign_key_checks = 0", false},
		{"SET @@global.foreign_key_checks = 0", false},
		{"SET time_zone = '+00:00'", false}, // changes what reads return
		{"SET NAMES utf8mb4", false},
		{"SET sql_mode = 'TRADITIONAL'", false},
		{"SET @x = 1", false},
		{"SET foreign_key_checks = @x", false},
		{"SET foreign_key_checks = (SELECT 1)", false},
		{"SET foreign_key_checks = 0, time_zone = 'UTC'", false},
		{"SET foreign_key_checks = 0; SELECT 1", false},
		{"SET autocommit = 0", false},
		{"SELECT 1", false},
		{"SET /*!50000 foreign_key_checks = 0 */", false},
		{"SET foreign_key_checks = 'unterminated", false},
	} {
		if got := PrimaryOnlySet(tc.sql); got != tc.want {
			t.Errorf("PrimaryOnlySet(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}

func TestReplayableSet(t *testing.T) {
	type a = Assignment
	for _, tc := range []struct {
		sql  string
		want []Assignment // nil: not replayable
	}{
		{"SET time_zone = '+00:00'", []a{{"time_zone", "'+00:00'"}}},
		{"set @@session.TIME_ZONE := 'UTC', sql_mode = 'TRADITIONAL'", []a{{"time_zone", "'UTC'"}, {"sql_mode", "'TRADITIONAL'"}}},
		{"SET SESSION group_concat_max_len = 1000000;", []a{{"group_concat_max_len", "1000000"}}},
		{"SET max_statement_time = -0", []a{{"max_statement_time", "-0"}}},
		{"SET sql_mode = DEFAULT", []a{{"sql_mode", "DEFAULT"}}},
		{"SET NAMES utf8mb4", []a{{"character_set_client", "utf8mb4"}, {"character_set_connection", "utf8mb4"}, {"character_set_results", "utf8mb4"}}},
		{"SET NAMES 'latin1' COLLATE 'latin1_bin', time_zone = 'UTC'", []a{{"character_set_client", "'latin1'"},
			{"character_set_connection", "'latin1'"}, {"character_set_results", "'latin1'"}, {"collation_connection", "'latin1_bin'"}, {"time_zone", "'UTC'"}}},
		{"/* app */ SET lc_time_names = 'de_DE'", []a{{"lc_time_names", "'de_DE'"}}},
		{"SET foreign_key_checks = 0", nil}, // primary-only, not replayed
		{"SET time_zone = @tz", nil},
		{"SET time_zone = (SELECT 'UTC')", nil},
		{"SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')", nil},
		{"SET GLOBAL time_zone = 'UTC'", nil},
		{"SET @@global.time_zone = 'UTC'", nil},
		{"SET time_zone = 'UTC', @x = 1", []a{{"time_zone", "'UTC'"}, {"@x", "1"}}}, // user variables too
		{"SET time_zone = 'UTC'; SELECT 1", nil},
		{"SET CHARACTER SET utf8mb4", nil},
		{"SET SESSION NAMES utf8mb4", nil},
		{"SET autocommit = 0", nil},
		{"SET SESSION TRANSACTION READ ONLY", nil},
		{"SET /*!50000 time_zone = 'UTC' */", nil},
		{"SET time_zone = 'it\\'s'", nil}, // backslash escapes: refused
	} {
		got, ok := ReplayableSet(tc.sql)
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("ReplayableSet(%q) = %v, %v; want %v", tc.sql, got, ok, tc.want)
		}
	}
}

func FuzzReplayableSet(f *testing.F) {
	for _, s := range []string{"SET time_zone = '+00:00'", "SET NAMES utf8mb4 COLLATE utf8mb4_bin", "SET sql_mode = ''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		got, ok := ReplayableSet(sql)
		if ok && len(got) == 0 {
			t.Errorf("ReplayableSet(%q): ok without assignments", sql)
		}
		for _, as := range got {
			if !replayVars[as.Name] || as.Value == "" {
				t.Errorf("ReplayableSet(%q): %v", sql, as)
			}
		}
	})
}
