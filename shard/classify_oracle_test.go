package shard_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/sqlparser"

	. "github.com/rwshard/rwshard/internal/route"
)

// The classifier's oracle lives here, in the sharding module, because it
// needs vitess; the driver module's tests use the standard library only.
// Its seed corpus is testdata/fuzz/FuzzClassify and the fragments below.

// FuzzClassify checks Classify against the vitess parser as an oracle:
// whenever vitess parses a piece of the text as something other than a
// plain, non-locking read, Classify must not answer Read. It also checks
// that Classify does not panic, is deterministic, agrees with the cached
// Classifier, and that a Read followed by a write is no longer a Read.
func FuzzClassify(f *testing.F) {
	for _, s := range fragments {
		f.Add(s)
	}
	parsers := vitessParsers(f)
	cached := NewClassifier(256)

	f.Fuzz(func(t *testing.T, sql string) {
		c, err := Classify(sql)
		again, againErr := Classify(sql)
		require.Equal(t, c, again, "deterministic")
		require.Equal(t, err == nil, againErr == nil)
		for range 2 { // a miss (or a hit, for a repeated input), then a hit
			cc, cerr := cached.Classify(sql)
			require.Equal(t, c, cc, "Classifier.Classify equals Classify")
			if err == nil {
				require.NoError(t, cerr)
			} else {
				require.EqualError(t, cerr, err.Error())
			}
		}
		if c.Kind != Read {
			return
		}
		require.Positive(t, c.Statements, "a read has a statement")

		w, _ := Classify(sql + "\n;INSERT INTO t VALUES (1)")
		require.NotEqual(t, Read, w.Kind, "a read followed by an INSERT")

		if vitessLexesDifferently(sql) {
			return
		}
		for _, p := range parsers {
			if bad, piece, stmt := vitessNonRead(p, sql); bad {
				t.Fatalf("Classify(%q) = Read, but vitess parses %q as %T: %s",
					sql, piece, stmt, sqlparser.String(stmt))
			}
		}
	})
}

// vitessParsers returns the oracle's parsers: MySQL 8.0.40, and older and
// newer servers, for which other versioned comments are code.
func vitessParsers(tb testing.TB) []*sqlparser.Parser {
	var ps []*sqlparser.Parser
	for _, v := range []string{"8.0.40", "5.6.0", "9.9.0"} {
		p, err := sqlparser.New(sqlparser.Options{MySQLServerVersion: v})
		require.NoError(tb, err)
		ps = append(ps, p)
	}
	return ps
}

// vitessNonRead reports whether vitess parses some piece of sql as
// something that is not a plain, non-locking read. Pieces vitess cannot
// parse say nothing.
func vitessNonRead(p *sqlparser.Parser, sql string) (bad bool, piece string, stmt sqlparser.Statement) {
	defer func() {
		if recover() != nil { // a vitess bug is not a finding about Classify
			bad = false
		}
	}()
	pieces, err := p.SplitStatementToPieces(sql)
	if err != nil {
		return false, "", nil
	}
	for _, piece := range pieces {
		stmt, err := p.Parse(piece)
		if err != nil {
			continue
		}
		if !vitessPlainRead(stmt) {
			return true, piece, stmt
		}
	}
	return false, "", nil
}

// vitessPlainRead reports whether a vitess statement is a plain read: a
// SELECT, UNION or VALUES without a lock or INTO anywhere, SHOW, or
// EXPLAIN/DESCRIBE of a table or of a plain read.
func vitessPlainRead(stmt sqlparser.Statement) bool {
	switch s := stmt.(type) {
	case *sqlparser.Select, *sqlparser.Union, *sqlparser.ValuesStatement:
		return !vitessLocksOrInto(s)
	case *sqlparser.Show, *sqlparser.ExplainTab, *sqlparser.CommentOnly:
		return true
	case *sqlparser.ExplainStmt:
		return vitessPlainRead(s.Statement)
	}
	return false
}

func vitessLocksOrInto(n sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch x := node.(type) {
		case *sqlparser.Select:
			found = found || x.Lock != sqlparser.NoLock || x.Into != nil
		case *sqlparser.Union:
			found = found || x.Lock != sqlparser.NoLock || x.Into != nil
		}
		return !found, nil
	}, n)
	return found
}

// vitessLexesDifferently reports texts that vitess's tokenizer may cut
// differently from the MySQL server, so that its parse says nothing about
// what the server runs. It errs on the side of "differently" (the text is
// then not checked against vitess). Known differences, found by this fuzz
// target:
//
//   - after '@' or '@@' vitess takes the next byte into the variable name
//     whatever it is, where MySQL ends an empty name there: in
//     "SELECT @#0;DELETE FROM t" MySQL sees a comment from '#' on; quotes
//     and backquotes in or right after a variable name differ too;
//   - …0e followed by a sign: vitess may start a number at the digit
//     ("\xac0e-- x": MySQL reads 0e and a comment);
//   - MySQL starts a comment at "--" followed by any space or control
//     byte, vitess only at "-- ", "--\t", "--\n", "--\r": "--\f" differs;
//   - inside the code of a versioned comment, MySQL and MariaDB read
//     another versioned comment as such (a /*! without digits is code),
//     vitess as a plain comment.
func vitessLexesDifferently(sql string) bool {
	if strings.Count(sql, "/*!")+strings.Count(sql, "/*M!") > 1 {
		return true
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '-' && i+2 < len(sql) && sql[i+1] == '-':
			if d := sql[i+2]; (d < ' ' || d == 0x7f) && d != '\t' && d != '\n' && d != '\r' {
				return true
			}
		case (c == 'e' || c == 'E') && i > 0 && isDigit(sql[i-1]) && i+1 < len(sql) && (sql[i+1] == '-' || sql[i+1] == '+'):
			return true
		case c == '@':
			j := i + 1
			if j < len(sql) && sql[j] == '@' {
				j++
			}
			if j >= len(sql) || !isIdentStart(sql[j]) {
				return true
			}
			for j < len(sql) && (isIdentStart(sql[j]) || isDigit(sql[j]) || sql[j] == '.') {
				j++
			}
			if j < len(sql) && (sql[j] == '\'' || sql[j] == '"' || sql[j] == '`') {
				return true
			}
			i = j - 1
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// fragments are pieces of SQL that change how a text is cut: quotes,
// escapes, comments of every kind, separators, parentheses, and words
// that matter for routing.
var fragments = []string{
	"SELECT ", "SELECT 1", " FROM t", " WHERE a = 1", "'", "\"", "`", "\\", "'a\\'", "\"a\\\"", "''", "\\'",
	"/*", "*/", "/*!", "/*!50000 ", "/*!99999 ", "/*!80000 ", "/*!57000 ", "/*M!100000 ", "/*+ ", "/* rwshard:primary */", "--", "-- ", "#", "\n", " ",
	";", "(", ")", ",", ".", "@", "@@", "@a", "@@session.x", ":=", "=", "?", "x'41'", "b'1'", "N'", "_utf8mb4'", "0x1", "1e", "1",
	"DELETE FROM t", "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "SET @a = 1", "SET autocommit = 0", "BEGIN", "COMMIT",
	"CALL p()", "DO 1", "USE db", "LOCK TABLES t READ", "CREATE TABLE t (a INT)",
	" FOR UPDATE", " FOR", " UPDATE", " LOCK IN SHARE MODE", " INTO @v", " INTO", "WITH c AS (SELECT 1) ", " UNION ",
	"LAST_INSERT_ID()", "GET_LOCK('a', 1)", "REPLACE(", "INSERT(", "SHOW TABLES", "EXPLAIN ", "DESCRIBE t", "VALUES ROW(1)",
	"EXPLAIN ANALYZE ", "ANALYZE ", "SET STATEMENT x=1 FOR ", "START TRANSACTION", "XA START 'x'", "ROLLBACK", "TABLE t",
	"SHOW WARNINGS", "HANDLER t OPEN", "PREPARE s FROM 'x'", "EXECUTE s", "1.5e", "e", "-", "+", "*", "/", "!", "M", "50000",
	"\x00", "\t", "\r", "$", ":", "NEXT VALUE FOR s", "SQL_CALC_FOUND_ROWS ", "@@identity", "/*!*/", "/**/", "/*!",
	"$$", "$t$", " AND CHAIN", " WORK", "SAVEPOINT a", "TO", " AS ", "RECURSIVE ", "c", "(SELECT 1)", " INTO OUTFILE 'f'", "LOCK", " IN", " SHARE",
}

// TestClassifyFragments checks random texts made of fragments against the
// same oracles as FuzzClassify. It is deterministic.
func TestClassifyFragments(t *testing.T) {
	parsers := vitessParsers(t)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	var b strings.Builder
	checked := 0
	for range n {
		b.Reset()
		if rng.IntN(2) == 0 {
			b.WriteString("SELECT 1 ")
		}
		for range 1 + rng.IntN(8) {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		sql := b.String()
		c, _ := Classify(sql)
		if c.Kind != Read {
			continue
		}
		w, _ := Classify(sql + "\n;INSERT INTO t VALUES (1)")
		require.NotEqualf(t, Read, w.Kind, "a read followed by an INSERT: %q", sql)
		if vitessLexesDifferently(sql) {
			continue
		}
		checked++
		for _, p := range parsers {
			if bad, piece, stmt := vitessNonRead(p, sql); bad {
				t.Errorf("Classify(%q) = Read, but vitess parses %q as %T: %s", sql, piece, stmt, sqlparser.String(stmt))
			}
		}
	}
	t.Logf("%d texts, %d reads checked against vitess", n, checked)
}
