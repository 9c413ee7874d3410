package rwshard_test

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// Behaviour parity: with one primary and no replicas, rwshard returns
// exactly what go-sql-driver/mysql returns for the same statements on the
// same server with the same parameters.

const parityParams = "parseTime=true&loc=UTC&multiStatements=true"

func parityDBs(t *testing.T, l *lab.Lab) (direct, rw *sql.DB) {
	t.Helper()
	direct = openWithT(t, "mysql", l.Primary().DSN(parityParams))
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", lab.AppUser, lab.AppPassword, l.Primary().Addr(), lab.AppDatabase, parityParams)
	rw = openWithT(t, rwshard.DriverName, dsn)
	return direct, rw
}

func openWithT(t *testing.T, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// money is a driver.Valuer, as application types are.
type money struct{ cents int64 }

func (m money) Value() (driver.Value, error) {
	return fmt.Sprintf("%d.%02d", m.cents/100, m.cents%100), nil
}

// result is everything a query returns: column metadata and raw values.
type result struct {
	Sets []resultSet
}

type resultSet struct {
	Columns []column
	Rows    [][]any
}

type column struct {
	Name, DBType string
	ScanType     string
	Nullable     [2]bool
	Length       [2]int64
	Decimal      [3]int64
}

// collect reads every result set with Scan into *any, which keeps the
// driver's own value types.
func collect(t *testing.T, rows *sql.Rows) result {
	t.Helper()
	defer rows.Close()
	var res result
	for {
		cts, err := rows.ColumnTypes()
		require.NoError(t, err)
		var set resultSet
		for _, ct := range cts {
			c := column{Name: ct.Name(), DBType: ct.DatabaseTypeName(), ScanType: fmt.Sprint(ct.ScanType())}
			c.Nullable[0], c.Nullable[1] = ct.Nullable()
			c.Length[0], _ = ct.Length()
			p, s, ok := ct.DecimalSize()
			c.Decimal = [3]int64{p, s, map[bool]int64{true: 1}[ok]}
			set.Columns = append(set.Columns, c)
		}
		for rows.Next() {
			vals := make([]any, len(cts))
			ptrs := make([]any, len(cts))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			set.Rows = append(set.Rows, vals)
		}
		require.NoError(t, rows.Err())
		res.Sets = append(res.Sets, set)
		if !rows.NextResultSet() {
			break
		}
	}
	return res
}

func TestLabParity(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, `CREATE OR REPLACE TABLE parity (
		id INT PRIMARY KEY, i8 TINYINT, u64 BIGINT UNSIGNED, i64 BIGINT, num DECIMAL(20,6),
		f FLOAT, d DOUBLE, bit8 BIT(8), vc VARCHAR(64), txt TEXT, bin VARBINARY(16), blb LONGBLOB,
		dt DATETIME(6), ts TIMESTAMP(3) NULL, da DATE, tm TIME(6), yr YEAR, js JSON, en ENUM('a','b'), nul INT NULL) DEFAULT CHARSET=utf8mb4`,
		`CREATE OR REPLACE PROCEDURE two_sets() BEGIN SELECT 1 AS one; SELECT 'two' AS two, NOW(6) > '2000-01-01' AS later; END`)
	directDB, rwDB := parityDBs(t, l)
	blob := bytes.Repeat([]byte{0, 1, 2, 250, 255}, 1<<19) // 2.5 MiB
	when := time.Date(2026, 11, 30, 12, 34, 56, 123456000, time.UTC)
	args := []any{
		int8(-128), uint64(math.MaxUint64), int64(math.MinInt64), money{cents: 1234},
		float32(1.5), math.Pi, []byte{0xA5}, "héllo ✓", strings.Repeat("t", 1000), []byte{0, 0xff, 0},
		blob, when, when.Truncate(time.Millisecond), when, "12:34:56.123456", 2026,
		json.RawMessage(`{"a": [1, 2, {"b": null}]}`), "b", nil,
	}
	// The same row written through each driver: id 1 directly, id 2
	// through rwshard.
	insert := "REPLACE INTO parity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	for i, db := range []*sql.DB{directDB, rwDB} {
		_, err := db.ExecContext(ctx, insert, append([]any{i + 1}, args...)...)
		require.NoError(t, err)
	}

	queries := []struct {
		q    string
		args []any
	}{
		{"SELECT * FROM parity WHERE id = 1", nil},      // text protocol
		{"SELECT * FROM parity WHERE id = ?", []any{1}}, // binary protocol
		{"SELECT * FROM parity WHERE id = 2", nil},      // written through rwshard
		{"SELECT u64, u64 - 1, CAST(? AS UNSIGNED) FROM parity WHERE id = 1", []any{uint64(1<<63 + 5)}},
		{"SELECT NULL, CAST(NULL AS DATETIME), ? IS NULL", []any{nil}},
		{"SELECT 1 AS a; SELECT 'x' AS b, 2.5 AS c", nil}, // multiple result sets
		{"CALL two_sets()", nil},                          // procedure result sets
		{"SELECT ? AS j", []any{json.RawMessage(`[1,"two"]`)}},
		{"SELECT ? AS t, ? AS d", []any{when, when.Format("2006-01-02")}},
		{"SELECT LENGTH(blb), MD5(blb) FROM parity WHERE id = ?", []any{2}},
	}
	for _, tc := range queries {
		want, err := directDB.QueryContext(ctx, tc.q, tc.args...)
		require.NoError(t, err, tc.q)
		got, err := rwDB.QueryContext(ctx, tc.q, tc.args...)
		require.NoError(t, err, tc.q)
		w, g := collect(t, want), collect(t, got)
		if !assert.True(t, reflect.DeepEqual(w, g), "%s", tc.q) {
			t.Logf("direct:  %#v\nrwshard: %#v", w, g)
		}
	}
	// The row written through rwshard equals the one written directly.
	rows, err := directDB.QueryContext(ctx, "SELECT * FROM parity ORDER BY id")
	require.NoError(t, err)
	both := collect(t, rows).Sets[0].Rows
	require.Len(t, both, 2)
	assert.Equal(t, both[0][1:], both[1][1:], "values written through rwshard differ")

	// Errors: the same *mysql.MySQLError, reachable the same way.
	for _, q := range []string{
		"SELEC 1",
		"SELECT * FROM no_such_table",
		"INSERT INTO parity (id) VALUES (1)",
		"SELECT 1 FROM parity WHERE no_such_column = 1",
	} {
		_, derr := directDB.ExecContext(ctx, q)
		_, rerr := rwDB.ExecContext(ctx, q)
		var dme, rme *mysql.MySQLError
		require.True(t, errors.As(derr, &dme), "%s: %v", q, derr)
		require.True(t, errors.As(rerr, &rme), "%s: %v", q, rerr)
		assert.Equal(t, dme.Number, rme.Number, q)
		assert.Equal(t, dme.SQLState, rme.SQLState, q)
		assert.Equal(t, dme.Message, rme.Message, q)
		assert.Equal(t, derr.Error(), rerr.Error(), "rwshard wrapped a server error: %s", q)
	}
	// sql.ErrNoRows, LastInsertId, RowsAffected.
	var x int
	_, err = rwDB.QueryContext(ctx, "SELECT 1")
	require.NoError(t, err)
	assert.ErrorIs(t, rwDB.QueryRowContext(ctx, "SELECT id FROM parity WHERE id = -1").Scan(&x), sql.ErrNoRows)
	_, err = directDB.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS parity_ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	res, err := rwDB.ExecContext(ctx, "INSERT INTO parity_ai (v) VALUES (1), (2), (3)")
	require.NoError(t, err)
	id, _ := res.LastInsertId()
	n, _ := res.RowsAffected()
	var first int64
	require.NoError(t, directDB.QueryRowContext(ctx, "SELECT MIN(id) FROM parity_ai WHERE id >= ?", id).Scan(&first))
	assert.Equal(t, first, id, "LastInsertId is the first id of the batch, as MySQL reports")
	assert.Equal(t, int64(3), n)
}
