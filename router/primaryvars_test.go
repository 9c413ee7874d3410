package router

import "testing"

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
