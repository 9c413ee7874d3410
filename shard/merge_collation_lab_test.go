package shard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// collationColumns are the character columns of the differential test and
// whether rwshard merges comparisons of them (utf8mb4_uca1400_as_cs has
// weights of three levels, which the merge refuses to compare).
var collationColumns = []struct {
	name, def string
	merged    bool
}{
	{"c_gen", "VARCHAR(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
	{"c_uni", "VARCHAR(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", true},
	{"c_bin", "VARCHAR(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", true},
	{"c_lat", "VARCHAR(24) CHARACTER SET latin1 COLLATE latin1_swedish_ci", true},
	{"c_char", "CHAR(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
	{"c_text", "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", true},
	{"c_cs", "VARCHAR(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_as_cs", false},
}

// collationValues mix case, accents, trailing spaces and a tab (below a
// space: 'b\t' sorts before 'b' under PAD SPACE); all fit latin1.
var collationValues = []string{
	"apple", "Apple", "APPLE", "apple ", "Zeta", "zeta", "zeta  ", "b", "B", "b ", "b\t", "b\tc",
	"é", "e", "É", "E", "è", "ée", "Ee ", "résumé", "resume", "RESUME", "Résumé ", "straße", "STRASSE",
	"a", "A", "", "  ", "x y", "X Y ",
}

// labQuery is one shape compared sharded against the unsharded copy.
// keyed lists the result columns whose value is any member of a group of
// values equal in column col's collation (a GROUP BY or DISTINCT value,
// MIN or MAX): those compare by the class of the value, the others
// exactly. ordered: the ORDER BY fixes the order of the rows as compared.
type labQuery struct {
	sql     string
	args    []any
	col     string
	keyed   []int
	ordered bool
}

// TestLabMergeCollations compares every shape of the merge that compares
// text, over columns of several collations, between a table sharded over
// two data sources and an unsharded copy with the same rows: no
// difference, and a refusal (shard.ErrUnsupported naming the reason) only
// where the merge cannot follow the collation.
func TestLabMergeCollations(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 5*time.Minute)
	db, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(labtest.RulesFile(t, l)))
	require.NoError(t, err)
	defer db.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := db.ExecContext(ctx, q, args...)
		require.NoError(t, err, q)
	}

	var defs []string
	for _, c := range collationColumns {
		defs = append(defs, c.name+" "+c.def+" NULL")
	}
	cols := "(order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, grp INT NOT NULL, amount DECIMAL(8,2), status VARCHAR(16), " +
		strings.Join(defs, ", ") + ")"
	exec("CREATE TABLE t_order " + cols)
	exec("CREATE TABLE ref_order " + cols)

	const seed = 20240611
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const nrows = 320
	names := "order_id, user_id, grp, amount, status"
	for _, c := range collationColumns {
		names += ", " + c.name
	}
	ph := strings.TrimSuffix(strings.Repeat("?, ", 5+len(collationColumns)), ", ")
	for batch := 0; batch < nrows; batch += 40 {
		var rowsPH []string
		var args []any
		for i := batch; i < batch+40; i++ {
			rowsPH = append(rowsPH, "("+ph+")")
			var amount any
			if rng.IntN(6) > 0 {
				amount = fmt.Sprintf("%d.%02d", rng.IntN(50), rng.IntN(4)*25)
			}
			args = append(args, 1000+i, 1+rng.IntN(10), rng.IntN(6), amount, "new")
			for range collationColumns {
				var v any
				if rng.IntN(7) > 0 {
					v = collationValues[rng.IntN(len(collationValues))]
				}
				args = append(args, v)
			}
		}
		for _, tbl := range []string{"t_order", "ref_order"} {
			exec("INSERT INTO "+tbl+" ("+names+") VALUES "+strings.Join(rowsPH, ", "), args...)
		}
	}
	// The two cases of the report: users 201 and 202 are on different
	// data sources (user_id % 2).
	for _, tbl := range []string{"t_order", "ref_order"} {
		exec("INSERT INTO " + tbl + " (order_id, user_id, grp, status) VALUES (1, 201, 9, 'Zeta'), (2, 202, 9, 'apple'), (3, 201, 9, 'b'), (4, 202, 9, 'b ')")
	}
	require.NoError(t, l.Sync(ctx, 20*time.Second)) // the reads go to the replicas

	var got [2]string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT MIN(status), MAX(status) FROM t_order WHERE user_id IN (201, 202) AND status IN ('Zeta', 'apple')").Scan(&got[0], &got[1]))
	assert.Equal(t, [2]string{"apple", "Zeta"}, got, "MIN, MAX in utf8mb4_general_ci")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(DISTINCT status) FROM t_order WHERE user_id IN (201, 202) AND status LIKE 'b%'").Scan(&n))
	assert.Equal(t, 1, n, "'b' and 'b ' are one value under PAD SPACE")

	// The class of each value in each column, as the server's own
	// equality decides: its least member, bytewise.
	var compared, differences, retried int
	classes := make(map[string]map[string]string)
	for _, c := range collationColumns {
		res, err := query(ctx, db, &retried, fmt.Sprintf(
			"SELECT CAST(CONVERT(x.%[1]s USING utf8mb4) AS BINARY), MIN(CAST(CONVERT(y.%[1]s USING utf8mb4) AS BINARY)) "+
				"FROM ref_order x JOIN ref_order y ON x.%[1]s = y.%[1]s GROUP BY CAST(CONVERT(x.%[1]s USING utf8mb4) AS BINARY)", c.name))
		require.NoError(t, err)
		classes[c.name] = make(map[string]string)
		for _, r := range res {
			classes[c.name][r[0]] = r[1]
		}
	}
	// What the test allows in a keyed column: collations fold at least
	// case and trailing spaces here, so classes must be fewer than values.
	require.Less(t, distinctValues(classes["c_gen"]), len(classes["c_gen"]))

	queries := collationQueries()
	refusals := map[string]int{}
	for _, q := range queries {
		merged := true
		for _, c := range collationColumns {
			if c.name == q.col {
				merged = c.merged
			}
		}
		sharded := strings.ReplaceAll(q.sql, "{T}", "t_order")
		g, gerr := query(ctx, db, &retried, sharded, q.args...)
		if gerr != nil {
			if !errors.Is(gerr, shard.ErrUnsupported) {
				t.Errorf("%s: %v, not ErrUnsupported", sharded, gerr)
				continue
			}
			_, reason, _ := strings.Cut(gerr.Error(), "unsupported: ")
			if reason == "" {
				t.Errorf("%s: refused without a reason: %v", sharded, gerr)
			}
			if merged {
				t.Errorf("%s: refused: %v", sharded, gerr)
			}
			refusals[refusalReason(reason)]++
			continue
		}
		want, err := query(ctx, db, &retried, strings.ReplaceAll(q.sql, "{T}", "ref_order"), q.args...)
		require.NoError(t, err, q.sql)
		compared++
		if diff := compareResults(classes[q.col], q, g, want); diff != "" {
			differences++
			t.Errorf("%s %v: %s", sharded, q.args, diff)
		}
	}
	t.Logf("%d rows, %d queries: %d compared, %d differences, refusals %v (%d runs again after server error 6)",
		nrows+4, len(queries), compared, differences, refusals, retried)
	assert.Zero(t, differences)
	assert.NotEmpty(t, refusals, "the three-level collation is refused")
}

// collationQueries are the shapes compared, for each character column.
func collationQueries() []labQuery {
	var qs []labQuery
	for _, c := range collationColumns {
		col := c.name
		f := func(format string) string { return strings.ReplaceAll(format, "@", col) }
		add := func(sql string, ordered bool, keyed ...int) {
			qs = append(qs, labQuery{sql: f(sql), col: col, keyed: keyed, ordered: ordered})
		}
		addArgs := func(sql string, args []any, ordered bool, keyed ...int) {
			qs = append(qs, labQuery{sql: f(sql), args: args, col: col, keyed: keyed, ordered: ordered})
		}
		// Aggregates without GROUP BY.
		add("SELECT COUNT(@), COUNT(DISTINCT @), MIN(@), MAX(@) FROM {T}", true, 2, 3)
		add("SELECT MIN(@), MAX(@), COUNT(*) FROM {T} WHERE user_id IN (1, 2, 3)", true, 0, 1)
		add("SELECT COUNT(DISTINCT @), SUM(DISTINCT amount), AVG(DISTINCT amount), COUNT(DISTINCT amount) FROM {T} WHERE @ IS NOT NULL", true)
		// GROUP BY, with and without ORDER BY, HAVING.
		add("SELECT @, COUNT(*), SUM(amount) FROM {T} GROUP BY @", false, 0)
		add("SELECT @, COUNT(*), MIN(order_id) FROM {T} GROUP BY @ ORDER BY @ DESC", true, 0)
		add("SELECT COUNT(*) AS n, @ FROM {T} GROUP BY @ ORDER BY n DESC, @ LIMIT 5", true, 1)
		add("SELECT grp, MIN(@), MAX(@), COUNT(DISTINCT @), COUNT(@) FROM {T} GROUP BY grp ORDER BY grp", true, 1, 2)
		add("SELECT grp, COUNT(DISTINCT @) AS n, SUM(DISTINCT amount) FROM {T} GROUP BY grp ORDER BY n, grp", true)
		add("SELECT grp, MAX(@) FROM {T} GROUP BY grp ORDER BY MAX(@), grp", true, 1)
		add("SELECT grp, COUNT(*) FROM {T} GROUP BY grp HAVING MAX(@) > 'b' ORDER BY grp", true)
		add("SELECT grp, COUNT(*) FROM {T} GROUP BY grp HAVING MIN(@) <= 'APPLE' OR MAX(@) = 'zeta' ORDER BY grp", true)
		add("SELECT @, COUNT(*) FROM {T} GROUP BY @ HAVING @ = 'apple' OR COUNT(*) > 14", false, 0)
		addArgs("SELECT grp FROM {T} GROUP BY grp HAVING MIN(@) < ? ORDER BY grp", []any{"b "}, true)
		add("SELECT grp, MIN(@) AS lo FROM {T} GROUP BY grp HAVING lo <> MAX(@) ORDER BY grp", true, 1)
		// DISTINCT.
		add("SELECT DISTINCT @ FROM {T}", false, 0)
		add("SELECT DISTINCT @ FROM {T} ORDER BY @ LIMIT 6", true, 0)
		add("SELECT DISTINCT @, grp FROM {T} ORDER BY grp DESC, @ LIMIT 9", true, 0)
		// ORDER BY with LIMIT: ties on the text broken by order_id, or
		// only the text selected (then the ties are one class).
		add("SELECT order_id, @ FROM {T} ORDER BY @, order_id LIMIT 12 OFFSET 7", true)
		add("SELECT order_id, @ FROM {T} ORDER BY @ DESC, order_id LIMIT 10", true)
		add("SELECT @ FROM {T} WHERE @ IS NOT NULL ORDER BY @ LIMIT 15", true, 0)
		add("SELECT order_id FROM {T} ORDER BY CONCAT(@, 'x'), order_id LIMIT 10", true)
	}
	return qs
}

// compareResults compares got with want: keyed columns by the class of
// their value (which must be a value of the column), the others exactly;
// as sequences when q is ordered, else as multisets. It returns "" when
// they agree.
func compareResults(class map[string]string, q labQuery, got, want [][]string) string {
	norm := func(rows [][]string) ([][]string, string) {
		out := make([][]string, len(rows))
		for i, r := range rows {
			out[i] = slices.Clone(r)
			for _, k := range q.keyed {
				if r[k] == "NULL" {
					continue
				}
				c, ok := class[r[k]]
				if !ok {
					return nil, fmt.Sprintf("%q is not a value of %s", r[k], q.col)
				}
				out[i][k] = "class:" + c
			}
		}
		if !q.ordered {
			sort.Slice(out, func(a, b int) bool { return strings.Join(out[a], "\x00") < strings.Join(out[b], "\x00") })
		}
		return out, ""
	}
	g, err := norm(got)
	if err != "" {
		return err
	}
	w, err := norm(want)
	if err != "" {
		return "reference: " + err
	}
	if !slices.EqualFunc(g, w, slices.Equal[[]string]) {
		return fmt.Sprintf("got %q, want %q", got, want)
	}
	return ""
}

// refusalReason is the reason of a refusal without the names in it.
func refusalReason(msg string) string {
	switch {
	case strings.Contains(msg, "several levels"):
		return "collation with several levels of weights"
	case strings.Contains(msg, "another collation"):
		return "collation differs between shards"
	case strings.Contains(msg, "without its weight"):
		return "text without a weight"
	}
	if i := strings.IndexAny(msg, "(:"); i > 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

func distinctValues(m map[string]string) int {
	seen := map[string]bool{}
	for _, v := range m {
		seen[v] = true
	}
	return len(seen)
}

// query runs q and reads every row as strings ("NULL" for NULL); an error
// of the query or of reading its rows is returned. A query whose
// temporary table the server could not delete (error 6: the lab's
// servers keep them in the machine's /tmp, where another server of the
// same process id, in another container, may have removed it) runs again:
// that is the machine's fault, not an answer.
func query(ctx context.Context, db *sql.DB, retried *int, q string, args ...any) ([][]string, error) {
	for attempt := 0; ; attempt++ {
		rows, err := db.QueryContext(ctx, q, args...)
		var res [][]string
		if err == nil {
			res, err = readStrings(rows)
		}
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 6 && attempt < 3 {
			*retried++
			continue
		}
		return res, err
	}
}

func readStrings(rows *sql.Rows) ([][]string, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
