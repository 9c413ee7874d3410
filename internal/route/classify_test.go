package route

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/hint"
)

// classifyCase is one row of the table test: a SQL text and the Kind and
// Effect it must get.
type classifyCase struct {
	sql  string
	kind Kind
	eff  Effect
}

// classifyCases is shared with the fuzz target, which seeds its corpus
// with it.
var classifyCases = []classifyCase{
	// Plain reads, MySQL and MariaDB forms.
	{"SELECT 1", Read, 0},
	{"select * from t where id = ?", Read, 0},
	{"SeLeCt a, b FROM t1 JOIN t2 ON t1.id = t2.id WHERE x > 1 ORDER BY a LIMIT 10", Read, 0},
	{"SELECT 1;", Read, 0},
	{"  \n\tSELECT 1  ", Read, 0},
	{"(SELECT 1)", Read, 0},
	{"((SELECT a FROM t) UNION (SELECT b FROM u))", Read, 0},
	{"SELECT a FROM t UNION ALL SELECT b FROM u", Read, 0},
	{"SELECT a FROM t UNION DISTINCT SELECT b FROM u ORDER BY 1 LIMIT 1", Read, 0},
	{"SELECT a FROM t INTERSECT SELECT a FROM u", Read, 0},
	{"SELECT a FROM t EXCEPT SELECT a FROM u", Read, 0},
	{"WITH c AS (SELECT 1) SELECT * FROM c", Read, 0},
	{"WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10) SELECT * FROM c", Read, 0},
	{"with a as (select 1), b (x, y) as (select 2, 3) select * from a, b", Read, 0},
	{"WITH c AS (SELECT 1) (SELECT * FROM c)", Read, 0},
	{"(WITH c AS (SELECT 1) SELECT * FROM c) UNION SELECT 2", Read, 0},
	{"WITH RECURSIVE c AS (SELECT 1 AS a UNION SELECT a + 1 FROM c) CYCLE a RESTRICT SELECT * FROM c", Read, 0},
	{"WITH `update` AS (SELECT 1) SELECT * FROM `update`", Read, 0},
	{"VALUES ROW(1, 2), ROW(3, 4)", Read, 0},
	{"VALUES (1, 2)", Read, 0},
	{"TABLE t", Read, 0},
	{"TABLE t ORDER BY a LIMIT 1", Read, 0},
	{"SELECT a FROM t WHERE b IN (SELECT c FROM u WHERE d = 1)", Read, 0},
	{"SELECT * FROM (SELECT a FROM t) AS x", Read, 0},
	{"SELECT COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", Read, 0},
	{"SELECT * FROM t WINDOW w AS (PARTITION BY a ORDER BY b)", Read, 0},
	{"SELECT * FROM t1 STRAIGHT_JOIN t2 ON t1.a = t2.a", Read, 0},
	{"SELECT * FROM t PARTITION (p0)", Read, 0},
	{"SELECT HIGH_PRIORITY SQL_BUFFER_RESULT a FROM t", Read, 0},
	{"select sql_no_cache * from t", Read, 0},
	{"SELECT * FROM information_schema.tables WHERE table_schema = 'x'", Read, 0},
	{"SELECT JSON_EXTRACT(doc, '$.a') FROM t", Read, 0},
	{"SELECT doc->>'$.a' FROM t", Read, 0},
	{"SELECT 1e5, .5, 1.5e-3, 0x1F, 0b101, 1abc FROM t", Read, 0},
	{"SELECT 1--1", Read, 0},
	{"SELECT 1e-- x;SET @a = 1", Read, 0},       // fragments: the identifier 1e, then a comment
	{"SELECT \xac0e-- ;DELETE FROM A", Read, 0}, // fuzz: an identifier ending in 0e, then a comment
	{"SELECT 1.5e-- 1;DELETE FROM t", Unknown, 0},
	{"SELECT .5e-- 1;DELETE FROM t", Unknown, 0},
	{"SELECT 1.5e", Unknown, 0},
	{"SELECT @a, @`b`, @'c', @\"d\"", Read, 0},
	{"SELECT @a = 1", Read, 0},
	{"SELECT @#0;DELETE FROM A00", Read, 0},             // fuzz: MySQL ends '@' before '#', a comment
	{"SELECT @a'; DELETE FROM t; -- ' FROM t", Read, 0}, // @a aliased by a string
	{"SELECT @@version, @@server_id, @@global.read_only, @@hostname", Read, 0},
	{"SELECT @@GLOBAL.gtid_executed", Read, 0},
	{"SELECT a FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2020-01-01 00:00:00'", Read, 0},
	{"SELECT * FROM t WHERE a = ? AND b IN (?, ?, ?)", Read, 0},

	// Words that look like statements but are not.
	{"SELECT 'FOR UPDATE' FROM t", Read, 0},
	{"SELECT * FROM t WHERE a = 'x FOR UPDATE'", Read, 0},
	{"SELECT \"; DELETE FROM t\" FROM t", Read, 0},
	{"SELECT ';' ; SELECT ';'", Read, 0},
	{"SELECT '*/' FROM t", Read, 0},
	{"SELECT 'INTO @a', 'a:=1' FROM t", Read, 0},
	{"SELECT `update`, `insert`, `delete`, `replace`, `into` FROM t", Read, 0},
	{"SELECT t.update, t.insert, t.delete, t.into FROM t", Read, 0},
	{"SELECT * FROM `update` WHERE `for` = 1", Read, 0},
	{"SELECT updated_at, deleted, inserted_by, replacement FROM t", Read, 0},
	{"SELECT REPLACE('a', 'a', 'b')", Read, 0},
	{"SELECT replace ('a', 'b', 'c') FROM t", Read, 0},
	{"SELECT REPLACE/* c */('a', 'b', 'c')", Read, 0},
	{"SELECT INSERT('abc', 1, 1, 'x')", Read, 0},
	{"SELECT insert ('abc', 1, 1, 'x') FROM t", Read, 0},
	{"SELECT a FROM t WHERE b LIKE '%update%'", Read, 0},
	{"SELECT 'it''s', \"say \"\"hi\"\"\", 'a\\\\'", Read, 0},
	{"SELECT 'O\\'Brien'", Read, 0},
	{"SELECT * FROM t WHERE name = 'O\\'Brien' AND city = 'x'", Read, 0},
	{"SELECT \"He said \\\"hi\\\"\"", Read, 0},
	{"SELECT x'4142', X'00', b'0101', B'1', _utf8mb4'abc', _binary'x', N'x', n'y'", Read, 0},
	{"SELECT _utf8mb4\"abc\" COLLATE utf8mb4_bin", Read, 0},

	// Comments anywhere.
	{"SELECT 1 -- DELETE FROM t", Read, 0},
	{"SELECT 1 --\tDELETE FROM t", Read, 0},
	{"SELECT 1 --", Read, 0},
	{"SELECT --\f;SET@0=0", Read, 0}, // fuzz: "--" and a form feed start a comment
	{"SELECT 1 # DROP TABLE t", Read, 0},
	{"SELECT 1#DROP TABLE t", Read, 0},
	{"SELECT 1 /* ; DELETE FROM t */", Read, 0},
	{"/* leading */ SELECT /* middle */ 1 /* trailing */", Read, 0},
	{"-- first line\nSELECT 1", Read, 0},
	{"# first line\r\nSELECT 1", Read, 0},
	{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t", Read, 0},
	{"SELECT /*+ SET_VAR(sort_buffer_size = 16M) */ a FROM t", Read, 0},
	{"SELECT /** doc **/ 1", Read, 0},
	{"SELECT/**/1", Read, 0},

	// Versioned comments are code.
	{"SELECT /*!40001 SQL_NO_CACHE */ * FROM t", Read, 0},
	{"SELECT /*!SQL_NO_CACHE*/ * FROM t", Read, 0},
	{"/*!40101 SELECT 1 */", Read, 0},
	{"SELECT 1 FROM dual WHERE 1 = 1 /*M!100500 AND 2 = 2 */", Read, 0},
	{"SELECT /*!50000 /* nested */ 1 */ FROM t", Read, 0},
	{"SELECT * FROM t /*!50000 FOR UPDATE */", LockingRead, 0},
	{"SELECT * FROM t /*M!100300 FOR UPDATE */", LockingRead, 0},
	{"SELECT 1 /*!50000 INTO @a */", Write, Pin},
	{"/*!50000 DELETE FROM t */", Write, 0},
	{"/*M!100500 DELETE FROM t */", Write, 0},
	{"/*!40101 SET NAMES utf8mb4 */", Write, Pin},
	{"/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;", Write, Pin},
	{"/*!50000 BEGIN */", Write, TxBegin},
	{"SELECT 1 /*!50000 ; DELETE FROM t */", Write, 0},

	// SHOW, DESCRIBE, EXPLAIN, ANALYZE, HELP.
	{"SHOW TABLES", Read, 0},
	{"show full tables from db like 'a%'", Read, 0},
	{"SHOW DATABASES", Read, 0},
	{"SHOW FULL PROCESSLIST", SessionRead, 0}, // the server's own state: the primary's
	{"SHOW CREATE TABLE t", Read, 0},
	{"SHOW INDEX FROM `update`", Read, 0},
	{"SHOW GLOBAL STATUS LIKE 'Threads%'", SessionRead, 0}, // the server's own state: the primary's
	{"SHOW GLOBAL VARIABLES", SessionRead, 0},              // the server's own state: the primary's
	{"SHOW VARIABLES LIKE 'read_only'", SessionRead, 0},    // the server's own state: the primary's
	{"SHOW SLAVE STATUS", SessionRead, 0},                  // the server's own state: the primary's
	{"SHOW REPLICA STATUS", SessionRead, 0},                // the server's own state: the primary's
	{"SHOW ALL SLAVES STATUS", SessionRead, 0},             // the server's own state: the primary's
	{"SHOW MASTER STATUS", SessionRead, 0},                 // the server's own state: the primary's
	{"SHOW BINARY LOG STATUS", SessionRead, 0},             // the server's own state: the primary's
	{"SHOW TABLE STATUS", Read, 0},
	{"SHOW FULL TABLES", Read, 0},
	{"SHOW FULL COLUMNS FROM t", Read, 0},
	{"SHOW BINLOG STATUS", SessionRead, 0},
	{"SHOW PROCESSLIST", SessionRead, 0},
	{"SHOW ENGINE INNODB STATUS", SessionRead, 0}, // the server's own state: the primary's
	{"SHOW GRANTS", SessionRead, 0},               // the server's own state: the primary's
	{"DESCRIBE t", Read, 0},
	{"DESC t", Read, 0},
	{"desc `insert`", Read, 0},
	{"DESCRIBE t col", Read, 0},
	{"DESCRIBE db.t 'a%'", Read, 0},
	{"DESCRIBE format", Read, 0},
	{"EXPLAIN t", Read, 0},
	{"EXPLAIN SELECT * FROM t", Read, 0},
	{"EXPLAIN FORMAT=JSON SELECT 1", Read, 0},
	{"EXPLAIN FORMAT = TREE SELECT 1", Read, 0},
	{"EXPLAIN FORMAT='JSON' SELECT 1", Read, 0},
	{"EXPLAIN ANALYZE SELECT * FROM t", Read, 0},
	{"EXPLAIN ANALYZE FORMAT=TREE SELECT * FROM t", Read, 0},
	{"EXPLAIN EXTENDED SELECT 1", Read, 0},
	{"EXPLAIN PARTITIONS SELECT 1", Read, 0},
	{"EXPLAIN FOR SCHEMA db SELECT 1", Read, 0},
	{"EXPLAIN (SELECT 1) UNION (SELECT 2)", Read, 0},
	{"EXPLAIN WITH c AS (SELECT 1) SELECT * FROM c", Read, 0},
	{"EXPLAIN TABLE t", Read, 0},
	{"DESCRIBE SELECT 1", Read, 0},
	{"ANALYZE SELECT * FROM t", Read, 0},
	{"ANALYZE FORMAT=JSON SELECT 1", Read, 0},
	{"HELP 'contents'", Read, 0},
	{"help 'delete'", Read, 0},
	{"EXPLAIN FOR CONNECTION 12", SessionRead, 0},
	{"EXPLAIN FORMAT=JSON FOR CONNECTION 12", SessionRead, 0},
	{"EXPLAIN SELECT * FROM t FOR UPDATE", LockingRead, 0},
	{"EXPLAIN DELETE FROM t", Write, 0},
	{"EXPLAIN INSERT INTO t VALUES (1)", Write, 0},
	{"DESCRIBE UPDATE t SET a = 1", Write, 0},
	{"EXPLAIN ANALYZE DELETE FROM t", Write, 0},
	{"EXPLAIN FORMAT=JSON INTO @plan SELECT 1", Write, Pin},
	{"EXPLAIN WITH c AS (SELECT 1) UPDATE t SET a = 1", Write, 0},
	{"ANALYZE UPDATE t SET a = 1", Write, 0},
	{"ANALYZE DELETE FROM t WHERE a = 1", Write, 0},
	{"ANALYZE FORMAT=JSON DELETE FROM t", Write, 0},
	{"ANALYZE INSERT INTO t SELECT * FROM u", Write, 0},
	{"ANALYZE TABLE t", Write, 0},
	{"analyze no_write_to_binlog table t", Write, 0},
	{"ANALYZE LOCAL TABLE t PERSISTENT FOR ALL", Write, 0},

	// Connection-bound SHOW.
	{"SHOW WARNINGS", SessionRead, 0},
	{"SHOW WARNINGS LIMIT 10", SessionRead, 0},
	{"show errors", SessionRead, 0},
	{"SHOW COUNT(*) WARNINGS", SessionRead, 0},
	{"SHOW COUNT(*) ERRORS", SessionRead, 0},
	{"SHOW PROFILES", SessionRead, 0},
	{"SHOW PROFILE CPU FOR QUERY 1", SessionRead, 0},
	{"SHOW STATUS", SessionRead, 0},
	{"SHOW SESSION STATUS LIKE 'Last_query_cost'", SessionRead, 0},
	{"SHOW SESSION VARIABLES LIKE 'sql_mode'", SessionRead, 0},
	{"SHOW LOCAL VARIABLES", SessionRead, 0},
	{"SHOW EXPLAIN FOR 12", SessionRead, 0},
	{"SHOW ANALYZE FORMAT=JSON FOR 12", SessionRead, 0},

	// Locking reads.
	{"SELECT * FROM t FOR UPDATE", LockingRead, 0},
	{"select * from t for share", LockingRead, 0},
	{"SELECT * FROM t LOCK IN SHARE MODE", LockingRead, 0},
	{"SELECT * FROM t FOR UPDATE NOWAIT", LockingRead, 0},
	{"SELECT * FROM t FOR UPDATE SKIP LOCKED", LockingRead, 0},
	{"SELECT * FROM t FOR SHARE OF t NOWAIT", LockingRead, 0},
	{"SELECT * FROM t FOR UPDATE WAIT 5", LockingRead, 0},
	{"SELECT * FROM t FOR /* c */ UPDATE", LockingRead, 0},
	{"SELECT * FROM t\nFOR\nUPDATE", LockingRead, 0},
	{"SELECT * FROM (SELECT * FROM t FOR UPDATE) x", LockingRead, 0},
	{"SELECT * FROM t WHERE a IN (SELECT a FROM u FOR SHARE)", LockingRead, 0},
	{"(SELECT 1 FROM t FOR UPDATE) UNION (SELECT 2)", LockingRead, 0},
	{"WITH c AS (SELECT * FROM t FOR UPDATE) SELECT * FROM c", LockingRead, 0},
	{"SELECT LAST_INSERT_ID() FROM t FOR UPDATE", LockingRead, 0},
	{"SET STATEMENT max_statement_time=5 FOR SELECT * FROM t FOR UPDATE", LockingRead, 0},
	{"SELECT 1; SELECT * FROM t LOCK IN SHARE MODE", LockingRead, 0},

	// Reads that write.
	{"SELECT a INTO @a FROM t LIMIT 1", Write, Pin},
	{"SELECT a FROM t INTO @a", Write, Pin},
	{"SELECT a, b FROM t INTO @a, @b", Write, Pin},
	{"SELECT * FROM t INTO OUTFILE '/tmp/x'", Write, 0},
	{"SELECT * INTO DUMPFILE '/tmp/x' FROM t", Write, 0},
	{"SELECT 1 UNION SELECT 2 INTO @a", Write, Pin},
	{"SELECT 1 INTO @x FOR UPDATE", Write, Pin},
	{"SELECT @a:=1", Write, Pin},
	{"SELECT @a := 1", Write, Pin},
	{"SELECT @rownum := @rownum + 1 AS n, a FROM t", Write, Pin},
	{"SELECT * FROM t WHERE (@x := a) > 0", Write, Pin},
	{"WITH c AS (SELECT 1) UPDATE t SET a = 1", Write, 0},
	{"WITH c AS (SELECT 1) DELETE FROM t", Write, 0},
	{"WITH RECURSIVE c AS (SELECT 1) DELETE t FROM t JOIN c ON t.a = c.a", Write, 0},
	{"WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c", Write, 0},
	{"WITH c AS (SELECT 1) SELECT * FROM c; UPDATE t SET a = 1", Write, 0},
	{"SELECT SETVAL(s, 10)", Write, 0},
	{"SELECT 1 FROM t WHERE EXISTS (DELETE FROM u)", Write, 0},
	{"SELECT * FROM t INSERT INTO u VALUES (1)", Write, 0},
	{"WITH c AS (SELECT 1) SELECT * FROM c REPLACE", Write, 0},

	// Session-bound reads.
	{"SELECT LAST_INSERT_ID()", SessionRead, 0},
	{"select last_insert_id ( )", SessionRead, 0},
	{"SELECT Last_Insert_Id/* c */()", SessionRead, 0},
	{"SELECT mydb.last_insert_id()", SessionRead, 0},
	{"SELECT * FROM t WHERE id = LAST_INSERT_ID()", SessionRead, 0},
	{"SELECT FOUND_ROWS()", SessionRead, 0},
	{"(SELECT FOUND_ROWS())", SessionRead, 0},
	{"SELECT ROW_COUNT()", SessionRead, 0},
	{"SELECT 1 UNION SELECT ROW_COUNT()", SessionRead, 0},
	{"SELECT CONNECTION_ID()", SessionRead, 0},
	{"SELECT NEXTVAL(s)", SessionRead, 0},
	{"SELECT LASTVAL(s)", SessionRead, 0},
	{"SELECT NEXT VALUE FOR s", SessionRead, 0},
	{"select next value for db.s", SessionRead, 0},
	{"SELECT PREVIOUS VALUE FOR s", SessionRead, 0},
	{"SELECT s.nextval, s.currval FROM dual", SessionRead, 0},
	{"SELECT GET_LOCK('x', 10)", SessionRead, Lock},
	{"SELECT RELEASE_LOCK('x')", SessionRead, Unlock},
	{"SELECT RELEASE_ALL_LOCKS()", SessionRead, Unlock},
	{"SELECT GET_LOCK('x', 10); CREATE PROCEDURE p() BEGIN SELECT 1; END; SELECT GET_LOCK('y', 1)", SessionRead, Pin | Lock},
	{"SELECT IS_USED_LOCK('x')", SessionRead, 0},
	{"SELECT IS_FREE_LOCK('x')", SessionRead, 0},
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", SessionRead, 0},
	{"SELECT @@last_insert_id", SessionRead, 0},
	{"SELECT @@IDENTITY", SessionRead, 0},
	{"SELECT @@last_gtid", SessionRead, 0},
	{"SELECT @@session.sql_mode", Read, 0},
	{"SELECT @@LOCAL.time_zone", Read, 0},
	{"SELECT @@session.time_zone, @@time_zone", Read, 0},
	{"SELECT @@session.foreign_key_checks", SessionRead, 0},
	{"SELECT @@tx_isolation", SessionRead, 0},
	{"SELECT @@session.last_insert_id", SessionRead, 0},
	{"SELECT @@warning_count, @@error_count", SessionRead, 0},
	{"SELECT @@in_transaction", SessionRead, 0},
	{"WITH c AS (SELECT LAST_INSERT_ID()) SELECT * FROM c", SessionRead, 0},
	{"SET STATEMENT max_statement_time=1 FOR SELECT LAST_INSERT_ID()", SessionRead, 0},
	{"SELECT 1; SELECT LAST_INSERT_ID()", SessionRead, 0},

	// DML, DDL and administration.
	{"INSERT INTO t VALUES (1)", Write, 0},
	{"insert into t (a) select a from u", Write, 0},
	{"INSERT INTO t VALUES (1) RETURNING id", Write, 0},
	{"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1", Write, 0},
	{"INSERT IGNORE INTO t VALUES (1)", Write, 0},
	{"INSERT INTO t SELECT * FROM u FOR UPDATE", Write, 0},
	{"INSERT /*+ SET_VAR(sql_mode='') */ INTO t VALUES (1)", Write, 0},
	{"UPDATE t SET a = 1 WHERE id = ?", Write, 0},
	{"UPDATE t SET a = 'FOR UPDATE'", Write, 0},
	{"UPDATE `select` SET a = 1", Write, 0},
	{"UPDATE t1, t2 SET t1.a = t2.a WHERE t1.id = t2.id", Write, 0},
	{"DELETE FROM t WHERE id = 1", Write, 0},
	{"DELETE FROM t WHERE id = 1 RETURNING *", Write, 0},
	{"DELETE t1 FROM t1 JOIN t2 ON t1.id = t2.id", Write, 0},
	{"REPLACE INTO t VALUES (1)", Write, 0},
	{"REPLACE INTO t VALUES (1) RETURNING id", Write, 0},
	{"REPLACE t SET a = 1", Write, 0},
	{"/* select */ DELETE FROM t", Write, 0},
	{"-- select\nDELETE FROM t", Write, 0},
	{"LOAD DATA INFILE '/tmp/x' INTO TABLE t", Write, 0},
	{"LOAD DATA LOCAL INFILE 'x' INTO TABLE t", Write, 0},
	{"LOAD XML INFILE 'x' INTO TABLE t", Write, 0},
	{"CREATE TABLE t (a INT)", Write, 0},
	{"CREATE TABLE t AS SELECT * FROM u", Write, 0},
	{"CREATE TABLE t SELECT * FROM u", Write, 0},
	{"CREATE TABLE IF NOT EXISTS t LIKE u", Write, 0},
	{"CREATE INDEX i ON t (a)", Write, 0},
	{"CREATE VIEW v AS SELECT 1", Write, 0},
	{"CREATE DATABASE d", Write, 0},
	{"CREATE SEQUENCE s START WITH 1", Write, 0},
	{"ALTER TABLE t ADD COLUMN b INT", Write, 0},
	{"ALTER SEQUENCE s RESTART 1", Write, 0},
	{"DROP TABLE t", Write, 0},
	{"DROP TABLE IF EXISTS t", Write, 0},
	{"RENAME TABLE a TO b", Write, 0},
	{"TRUNCATE TABLE t", Write, 0},
	{"TRUNCATE t", Write, 0},
	{"GRANT SELECT ON *.* TO 'u'@'%'", Write, 0},
	{"REVOKE SELECT ON *.* FROM 'u'@'%'", Write, 0},
	{"DO SLEEP(1)", Write, 0},
	{"DO RELEASE_LOCK('a')", Write, Unlock},
	{"OPTIMIZE TABLE t", Write, 0},
	{"REPAIR TABLE t", Write, 0},
	{"CHECK TABLE t", Write, 0},
	{"CHECKSUM TABLE t", Write, 0},
	{"FLUSH TABLES", Write, Pin},
	{"FLUSH PRIVILEGES", Write, Pin},
	{"KILL 12", Write, 0},
	{"KILL QUERY 12", Write, 0},
	{"SAVEPOINT a", Write, 0},
	{"RELEASE SAVEPOINT a", Write, 0},
	{"ROLLBACK TO a", Write, 0},
	{"ROLLBACK TO SAVEPOINT a", Write, 0},
	{"rollback work to savepoint a", Write, 0},
	{"EXECUTE stmt1", Write, Pin},
	{"EXECUTE stmt1 USING @a", Write, Pin},
	{"DEALLOCATE PREPARE stmt1", Write, 0},
	{"DROP PREPARE stmt1", Write, 0},
	{"UNLOCK TABLES", Write, 0},
	{"RESET QUERY CACHE", Write, 0},
	{"PURGE BINARY LOGS TO 'mysql-bin.000010'", Write, 0},
	{"INSTALL PLUGIN x SONAME 'x.so'", Write, 0},
	{"CHANGE MASTER TO MASTER_HOST='h'", Write, 0},
	{"STOP SLAVE", Write, 0},
	{"START SLAVE", Write, 0},
	{"START REPLICA", Write, 0},
	{"SHUTDOWN", Write, 0},
	{"BINLOG 'abc'", Write, 0},
	{"XA END 'x'", Write, 0},
	{"XA PREPARE 'x'", Write, 0},
	{"XA RECOVER", Write, 0},
	{"SIGNAL SQLSTATE '45000'", Write, 0},
	{"CREATE TRIGGER trg BEFORE UPDATE ON t FOR EACH ROW SET NEW.a = 1", Write, 0},
	{"CREATE PROCEDURE p() BEGIN SELECT 1; END", Write, 0},
	{"CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN START TRANSACTION; COMMIT; END", Write, 0},
	{"BEGIN NOT ATOMIC SELECT 1; END", Write, 0},
	{"BEGIN NOT ATOMIC DECLARE x INT; BEGIN SELECT 1; END; COMMIT; END", Write, 0},

	// Session effects.
	{"SET @a = 1", Write, Pin},
	{"SET @autocommit = 0", Write, Pin},
	{"SET NAMES utf8mb4", Write, Pin},
	{"SET CHARACTER SET utf8", Write, Pin},
	{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", Write, Pin},
	{"SET SESSION TRANSACTION READ ONLY", Write, Pin},
	{"SET sql_mode = 'ANSI'", Write, Pin},
	{"SET GLOBAL max_connections = 100", Write, Pin},
	{"SET PASSWORD = 'x'", Write, Pin},
	{"SET ROLE ALL", Write, Pin},
	{"SET autocommit=0", Write, Pin | AutocommitOff},
	{"SET autocommit = 1", Write, Pin | AutocommitOn},
	{"SET @@autocommit=0", Write, Pin | AutocommitOff},
	{"SET @@session.autocommit=0", Write, Pin | AutocommitOff},
	{"SET @@SESSION.AUTOCOMMIT = 1", Write, Pin | AutocommitOn},
	{"SET SESSION autocommit = 0", Write, Pin | AutocommitOff},
	{"SET LOCAL autocommit = 1", Write, Pin | AutocommitOn},
	{"set AUTOCOMMIT = off", Write, Pin | AutocommitOff},
	{"SET autocommit = FALSE", Write, Pin | AutocommitOff},
	{"SET autocommit = ON", Write, Pin | AutocommitOn},
	{"SET autocommit = true", Write, Pin | AutocommitOn},
	{"SET autocommit = '0'", Write, Pin | AutocommitOff},
	{"SET autocommit = 'ON'", Write, Pin | AutocommitOn},
	{"SET autocommit := 0", Write, Pin | AutocommitOff},
	{"SET autocommit = @saved", Write, Pin | AutocommitOff},
	{"SET autocommit = DEFAULT", Write, Pin | AutocommitOff},
	{"SET autocommit = 0, autocommit = 1", Write, Pin | AutocommitOn},
	{"SET sql_mode = '', autocommit = 0", Write, Pin | AutocommitOff},
	{"SET autocommit = 0, sql_mode = CONCAT(@@sql_mode, ',ANSI')", Write, Pin | AutocommitOff},
	{"SET GLOBAL autocommit = 0", Write, Pin},
	{"SET @@global.autocommit = 0", Write, Pin},
	{"SET PERSIST autocommit = 0", Write, Pin},
	{"SET GLOBAL x = 1, autocommit = 0", Write, Pin | AutocommitOff},
	{"SET GLOBAL x = 1, autocommit = 1", Write, Pin},
	{"/*!40101 SET autocommit = 0 */", Write, Pin | AutocommitOff},
	{"SET STATEMENT max_statement_time=1 FOR SELECT 1", Read, 0},
	{"SET STATEMENT sql_mode='' FOR UPDATE t SET a = 1", Write, 0},
	{"SET STATEMENT a=1, b=(1) FOR DELETE FROM t", Write, 0},
	{"USE db", Write, Pin},
	{"use `db`", Write, Pin},
	{"CREATE TEMPORARY TABLE t (a INT)", Write, TempTable},
	{"CREATE TEMPORARY TABLE t SELECT * FROM u", Write, TempTable},
	{"CREATE OR REPLACE TEMPORARY TABLE t (a INT)", Write, TempTable},
	{"create temporary table if not exists t like u", Write, TempTable},
	{"DROP TEMPORARY TABLE t", Write, TempTable},
	{"LOCK TABLES t READ", Write, Pin},
	{"LOCK TABLE t WRITE", Write, Pin},
	{"lock tables t1 read, t2 write", Write, Pin},
	{"LOCK INSTANCE FOR BACKUP", Write, Pin},
	{"PREPARE s FROM 'SELECT 1'", Write, Pin},
	{"PREPARE s FROM @sql", Write, Pin},
	{"CALL p()", Write, Pin},
	{"CALL p(@out)", Write, Pin},
	{"HANDLER t OPEN", Write, Pin},
	{"FLUSH TABLES WITH READ LOCK", Write, Pin},
	{"EXECUTE IMMEDIATE 'SET @a = 1'", Write, Pin},
	{"BACKUP STAGE START", Write, Pin},
	{"GET DIAGNOSTICS @n = NUMBER", Write, Pin},
	{"DO GET_LOCK('a', 1)", Write, Lock},
	{"BEGIN", Write, TxBegin},
	{"begin work", Write, TxBegin},
	{"BEGIN;", Write, TxBegin},
	{"START TRANSACTION", Write, TxBegin},
	{"START TRANSACTION READ ONLY", Write, TxBegin},
	{"START TRANSACTION READ WRITE", Write, TxBegin},
	{"START TRANSACTION WITH CONSISTENT SNAPSHOT", Write, TxBegin},
	{"start transaction with consistent snapshot, read only", Write, TxBegin},
	{"XA START 'x'", Write, TxBegin},
	{"XA BEGIN 'x'", Write, TxBegin},
	{"COMMIT", Write, TxEnd},
	{"COMMIT WORK", Write, TxEnd},
	{"commit work and no chain", Write, TxEnd},
	{"COMMIT AND CHAIN", Write, 0},
	{"COMMIT WORK AND CHAIN NO RELEASE", Write, 0},
	{"COMMIT RELEASE", Write, TxEnd},
	{"COMMIT NO RELEASE", Write, TxEnd},
	{"ROLLBACK", Write, TxEnd},
	{"ROLLBACK WORK", Write, TxEnd},
	{"ROLLBACK AND CHAIN", Write, 0},
	{"ROLLBACK AND NO CHAIN", Write, TxEnd},
	{"XA COMMIT 'x'", Write, TxEnd},
	{"XA COMMIT 'x' ONE PHASE", Write, TxEnd},
	{"XA ROLLBACK 'x'", Write, TxEnd},

	// Several statements.
	{"SELECT 1; SELECT 2", Read, 0},
	{"SELECT 1;;; SELECT 2;", Read, 0},
	{"SELECT 1; INSERT INTO t VALUES (1)", Write, 0},
	{"SELECT * FROM t; DELETE FROM t", Write, 0},
	{"DELETE FROM t; SELECT 1", Write, 0},
	{"BEGIN; SELECT 1 FROM t FOR UPDATE; COMMIT", Write, TxBegin | TxEnd},
	{"SET autocommit=0; SELECT 1", Write, Pin | AutocommitOff},
	{"INSERT INTO t VALUES (1); SELECT LAST_INSERT_ID()", Write, 0},
	{"SELECT 1; BEGIN", Write, TxBegin},
	{"SELECT 1; USE db", Write, Pin},
	{"SELECT 1; FOO", Unknown, 0},
	{"SELECT (1; SELECT 2)", Unknown, 0},
	// Fuzz finding: vitess splits at a ';' inside parentheses.
	{"WITH A AS (0000000) (00000000000000000000;SET A0=00", Unknown, 0},
	{"FOO; COMMIT", Unknown, 0},

	// Unknown: unrecognized or malformed; never Read.
	{"", Unknown, 0},
	{"   ", Unknown, 0},
	{";", Unknown, 0},
	{"/* just a comment */", Unknown, 0},
	{"-- just a comment", Unknown, 0},
	{"FOOBAR", Unknown, 0},
	{"DELIMITER $$", Unknown, 0},
	{"IF 1 THEN SELECT 1; END IF", Unknown, 0},
	{"42", Unknown, 0},
	{"?", Unknown, 0},
	{"(", Unknown, 0},
	{"(INSERT INTO t VALUES (1))", Unknown, 0},
	{"WITH c AS (SELECT 1)", Unknown, 0},
	{"WITH c AS SELECT 1", Unknown, 0},
	{"WITH c AS (SELECT 1) CALL p()", Unknown, 0},
	{"COMMIT AND", Unknown, 0},
	{"COMMIT foo", Unknown, 0},
	{"BEGIN WORK foo", Unknown, 0},
	{"SET STATEMENT x=1", Unknown, 0},
	{"SHOW", Unknown, 0},
	{"EXPLAIN", Unknown, 0},
	{"SELECT 'abc", Unknown, 0},
	{"SELECT \"abc", Unknown, 0},
	{"SELECT `abc", Unknown, 0},
	{"SELECT 'abc\\'", Unknown, 0},
	{"SELECT 1 /* unterminated", Unknown, 0},
	{"SELECT 1 /*+ unterminated", Unknown, 0},
	{"/*!50000 SELECT 1", Unknown, 0},
	{"SELECT x'4G'", Unknown, 0},
	{"SELECT b'012'", Unknown, 0},
	{"SELECT x'41", Unknown, 0},
	{"SELECT 1 \x00", Unknown, 0},
	{"SELECT 1 # comment \x00 DELETE FROM t", Unknown, 0},
	{"SELECT 1 FROM t; SELECT 'x", Unknown, 0},
	{"BEGIN; SELECT 'x", Write, TxBegin},
	{"SELECT @@`x`", SessionRead, 0},

	// Texts the server may cut differently: unknown unless every reading
	// is a plain read.
	{"SELECT 'a\\'; DELETE FROM t; -- '", Unknown, 0},
	{"SELECT 'a\\'; BEGIN; -- '", Unknown, TxBegin},
	{"SELECT \"a\\\"; DELETE FROM t; -- \"", Unknown, 0},
	{"SELECT 1 /*!90000 , ( */ ; SET @x = 1", Unknown, Pin},
	{"SELECT 1 /*!99999 FROM t WHERE 'a' = '*/ ; DROP TABLE t; -- '*/", Unknown, 0},
	{"SELECT 1 /*M!999999 ; DELETE FROM t */", Write, 0},
	{"SELECT /*!50000 'a */ ; DELETE FROM t; -- ' */ 1", Unknown, 0},
	// fragments: a skipped versioned comment holds one nested comment.
	{"/*!99999 /*M!100000 /* rwshard:primary */SHOW TABLES*/LOCK TABLES t READ", Unknown, Pin},
	{"SELECT 1 /*!99999 /* nested */ ; DELETE FROM t */", Write, 0},
	{"SELECT 1 /*M!999999 /* x */ ; DELETE FROM t */", Write, 0},
	{"SELECT 1 /*M!100000 /* x */ 2 */", Read, 0},
	// fuzz: a versioned comment in a versioned comment is one again.
	{"SELECT/*!/*!'*/;DELETE FROM A#00'*/", Read, 0},
	{"SELECT /*!50000 1 /*!99999 ; DELETE FROM t */ */", Write, 0},
	// MySQL 9 dollar quoting.
	{"SELECT $$ ' $$; DELETE FROM t; -- '", Unknown, 0},
	{"SELECT $a$ ; DELETE FROM t; $a$", Write, 0},
	{"SELECT $a, a$b, $ FROM t", Read, 0},
	{"SELECT $tag$ x $tag$ FROM t", Read, 0},
}

func (c classifyCase) String() string {
	return fmt.Sprintf("%q", c.sql)
}

func TestClassify(t *testing.T) {
	require.GreaterOrEqual(t, len(classifyCases), 220)
	seen := make(map[string]bool, len(classifyCases))
	for _, tc := range classifyCases {
		require.Falsef(t, seen[tc.sql], "duplicate case %v", tc)
		seen[tc.sql] = true
		c, err := Classify(tc.sql)
		require.NoErrorf(t, err, "%v", tc)
		assert.Equalf(t, tc.kind, c.Kind, "kind of %v", tc)
		assert.Equalf(t, tc.eff, c.Effect, "effect of %v: got %05b want %05b", tc, c.Effect, tc.eff)
	}
}

func TestClassifyStatements(t *testing.T) {
	for _, tc := range []struct {
		sql string
		n   int
	}{
		{"", 0},
		{"  \n ", 0},
		{";;", 0},
		{"/* c */ -- d\n # e", 0},
		{"SELECT 1", 1},
		{"SELECT 1;", 1},
		{"SELECT 1 ;  ", 1},
		{"SELECT 1; SELECT 2", 2},
		{"SELECT 1;;SELECT 2;", 2},
		{"SELECT ';'; SELECT \";\"; SELECT `;`", 3},
		{"SELECT 1 /* ; */ -- ;\n", 1},
		{"SELECT (1; 2)", 1},
		{"BEGIN; UPDATE t SET a = 1; COMMIT;", 3},
		{"SELECT 1; /* unterminated", 2},
		{"/*!50000 SELECT 1; SELECT 2 */", 2},
	} {
		c, err := Classify(tc.sql)
		require.NoError(t, err)
		assert.Equalf(t, tc.n, c.Statements, "statements in %q", tc.sql)
	}
}

func TestClassifyHint(t *testing.T) {
	primary := hint.Hint{Route: hint.PrimaryOnly}
	for _, tc := range []struct {
		sql  string
		want hint.Hint
		kind Kind
	}{
		{"SELECT 1", hint.Hint{}, Read},
		{"/* rwshard:primary */ SELECT 1", primary, Read},
		{"SELECT /* RWSHARD:PRIMARY */ 1", primary, Read},
		{"SELECT 1 -- rwshard:replica\n", hint.Hint{Route: hint.ReplicaOK}, Read},
		{"# rwshard:node=replica2\nSELECT 1", hint.Hint{Route: hint.NodeOnly, Node: "replica2"}, Read},
		{"/* rwshard:max_lag=500ms */ SELECT 1 /* rwshard:replica */", hint.Hint{Route: hint.ReplicaOK, MaxLag: 500 * time.Millisecond}, Read},
		{"/* rwshard:replica */ SELECT 1 /* rwshard:primary */", primary, Read},
		{"/* rwshard:max_lag=2s */ SELECT 1; /* rwshard:max_lag=1s */ SELECT 2", hint.Hint{MaxLag: time.Second}, Read},
		{"/* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true */ SELECT 1", primary, Read},
		{"/* an ordinary comment */ SELECT 1", hint.Hint{}, Read},
		{"/*+ rwshard:primary */ SELECT 1", hint.Hint{}, Read},
		{"SELECT '/* rwshard:primary */'", hint.Hint{}, Read},
		{"/* rwshard:primary */ UPDATE t SET a = 1", primary, Write},
	} {
		c, err := Classify(tc.sql)
		require.NoErrorf(t, err, "%q", tc.sql)
		assert.Equalf(t, tc.want, c.Hint, "hint of %q", tc.sql)
		assert.Equalf(t, tc.kind, c.Kind, "kind of %q", tc.sql)
	}
}

func TestClassifyHintError(t *testing.T) {
	for _, sql := range []string{
		"/* rwshard:bogus */ SELECT 1",
		"SELECT 1 -- rwshard:\n",
		"/* rwshard:primary,replica */ SELECT 1",
		"/* rwshard:max_lag=soon */ SELECT 1",
		"/* SHARDINGSPHERE_HINT: SHADOW=true */ SELECT 1",
		"SELECT 1; /* rwshard:node */ SELECT 2",
	} {
		c, err := Classify(sql)
		var he *hint.Error
		require.ErrorAsf(t, err, &he, "%q", sql)
		assert.NotEqualf(t, Unknown, c.Kind, "the class is still computed for %q", sql)
	}
}

// TestClassifyAllocs checks that the scanner does not allocate. (A comment
// that is a hint costs the allocation hint.Parse makes for it.)
func TestClassifyAllocs(t *testing.T) {
	for _, sql := range []string{
		firstSightSQL,
		"/* an ordinary comment */ SELECT 1 -- another\n",
		"SET autocommit = 0",
		"SELECT 'O\\'Brien' /*!50000 FOR UPDATE */",
	} {
		n := testing.AllocsPerRun(100, func() { _, _ = Classify(sql) })
		assert.Zerof(t, n, "allocations classifying %q", sql)
	}
}
