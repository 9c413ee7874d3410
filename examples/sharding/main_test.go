package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// TestRun runs the example on a sharded lab of its own, given a rules
// file for it as a user gives theirs, and checks its story: the physical tables on both groups, every row in the physical
// table its keys name, correct results, each refusal's error, and reads
// served by each shard's replica. The placement is also checked on the
// primaries directly, not only from what the example prints.
func TestRun(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	var b strings.Builder
	if err := run(labtest.Ctx(t, 3*time.Minute), &b, rulesFile(t, l)); err != nil {
		t.Fatalf("run: %v\n%s", err, b.String())
	}
	out := b.String()
	t.Log(out)
	assert.NotContains(t, out, lab.AppPassword, "the passwords in the rules are redacted")

	// 2. The physical tables, as every node has them.
	tables := step(t, out, 2)
	orderTables := "t_order_0 t_order_1 t_order_item_0 t_order_item_1 t_region"
	for node, want := range map[string]string{
		"ds_0-primary": "t_customer " + orderTables, "ds_0-replica1": "t_customer " + orderTables,
		"ds_1-primary": orderTables, "ds_1-replica1": orderTables,
	} {
		assert.Regexp(t, `(?m)^    `+node+` +`+want+`$`, tables)
	}
	// An earlier run's tables are dropped on every data node they have.
	assert.Regexp(t, `(?m)^  DROP TABLE IF EXISTS .* → ran on ds_0-primary×6 ds_1-primary×5 \(write×11\)$`, tables)
	assert.Regexp(t, `(?m)^  CREATE TABLE t_order \(…\) +all-shards +→ ds_0.t_order_0 ds_0.t_order_1 ds_1.t_order_0 ds_1.t_order_1$`, tables)
	assert.Regexp(t, `(?m)^  CREATE TABLE t_region \(…\) +broadcast-write +→ ds_0.t_region ds_1.t_region$`, tables)
	assert.Regexp(t, `(?m)^  CREATE TABLE t_customer \(…\) +default-data-source +→ ds_0.t_customer$`, tables)

	// 3. Every row where user_id % 2 and order_id % 2 say; LastInsertId is
	// the key of the first row of the VALUES list.
	insert := step(t, out, 3)
	m := regexp.MustCompile(`LastInsertId (\d+) `).FindStringSubmatch(insert)
	require.NotNil(t, m, insert)
	first, _ := strconv.ParseInt(m[1], 10, 64)
	rows := regexp.MustCompile(`(?m)^    order_id (\d+)  user_id (\d+) +(\S+)  in ds_(\d).t_order_(\d) .*?(← LastInsertId)?$`).FindAllStringSubmatch(insert, -1)
	require.Len(t, rows, len(Orders), insert)
	for i, r := range rows {
		id, _ := strconv.ParseInt(r[1], 10, 64)
		user, _ := strconv.Atoi(r[2])
		assert.Equal(t, Orders[i].User, user, "row %d: keys rise in VALUES order", i)
		assert.Equal(t, Orders[i].Amount, r[3], "row %d", i)
		assert.Equal(t, strconv.Itoa(user%2), r[4], "data source of %s", r[0])
		assert.Equal(t, strconv.FormatInt(id%2, 10), r[5], "table of %s", r[0])
		assert.Equal(t, i == 0, id == first && r[6] != "", "LastInsertId mark on %s", r[0])
	}
	assert.Greater(t, first, int64(1_000_000_000_000), "a snowflake key")
	assert.Contains(t, insert, "RowsAffected 8,")
	// One unit per physical table that got rows. (Explain draws keys of
	// its own, so its tables can differ from the run's; its data sources
	// cannot.)
	assert.Regexp(t, `Explain: multi-shard, [234] units\n(      ds_(\d) on ds_\d-primary: insert into t_order_\d\(.*, order_id\) values \(\?, \?, \?, \?, \?\)( ×\d)?\n)+`, insert)
	units := map[string]map[string]bool{"ds_0": {}, "ds_1": {}}
	for _, r := range rows {
		units["ds_"+r[4]]["t_order_"+r[5]] = true
	}
	assert.Contains(t, insert, fmt.Sprintf("ran on ds_0-primary×%d ds_1-primary×%d (write×%d)",
		len(units["ds_0"]), len(units["ds_1"]), len(units["ds_0"])+len(units["ds_1"])))
	placement(t, l, len(Orders)+2)

	// 4. Results, and where each unit ran.
	reads := step(t, out, 4)
	one := part(t, reads, "one shard:")
	assert.Regexp(t, `Explain: single-shard, 1 unit\n +ds_1 on ds_1-replica1: select .* from t_order_\d as o join t_region as r `, one)
	assert.Regexp(t, `(?m)^ +\d+ +99.90 +paid +south$`, one)
	assert.Contains(t, one, "ran on ds_1-replica1×1 (replica×1)")

	user2 := part(t, reads, "one data source:")
	assert.Regexp(t, `Explain: multi-shard, 2 units\n +ds_0 on ds_0-replica1: .* from t_order_0 .*\n +ds_0 on ds_0-replica1: .* from t_order_1 `, user2)
	assert.Equal(t, []string{"63.00", "12.50"}, column(user2, 1))
	assert.Contains(t, user2, "ran on ds_0-replica1×2 (replica×2)")

	// The expected results, computed from Orders.
	sorted := slices.Clone(Orders)
	slices.SortFunc(sorted, func(a, b Order) int { return cents(b.Amount) - cents(a.Amount) })
	var top []string
	for _, o := range sorted[:3] {
		top = append(top, fmt.Sprintf("%d %s", o.User, o.Amount))
	}
	largest := part(t, reads, "every shard: the 3 largest")
	assert.Regexp(t, `Explain: all-shards, 4 units`, largest)
	assert.Contains(t, largest, "order by amount desc limit 3")
	var got []string
	for _, r := range rowsOf(largest) {
		got = append(got, r[0]+" "+r[2])
	}
	assert.Equal(t, top, got)
	assert.Contains(t, largest, "ran on ds_0-replica1×2 ds_1-replica1×2 (replica×4)")

	count, sum := map[string]int{}, map[string]int{}
	for _, o := range Orders {
		count[o.Status]++
		sum[o.Status] += cents(o.Amount)
	}
	var want []string
	for _, s := range []string{"new", "paid", "shipped"} {
		want = append(want, fmt.Sprintf("%s %d %d.%02d", s, count[s], sum[s]/100, sum[s]%100))
	}
	byStatus := part(t, reads, "every shard: orders and totals")
	got = nil
	for _, r := range rowsOf(byStatus) {
		got = append(got, strings.Join(r, " "))
	}
	assert.Equal(t, want, got)
	assert.Contains(t, byStatus, "ran on ds_0-replica1×2 ds_1-replica1×2 (replica×4)")

	// 5. The transaction: both primaries, both committed; the binding join
	// on one shard's replica.
	tx := step(t, out, 5)
	assert.Contains(t, tx, "ran on ds_0-primary×2 ds_1-primary×2 (in-transaction×4)")
	assert.Regexp(t, `ds_1-primary: order \d+ of user 5: 1 row in t_order_\d, 2 rows in t_order_item_\d`, tx)
	assert.Regexp(t, `ds_0-primary: order \d+ of user 6: 1 row in t_order_\d, 2 rows in t_order_item_\d`, tx)
	join := part(t, tx, "binding tables")
	m = regexp.MustCompile(`single-shard, 1 unit\n +ds_1 on ds_1-replica1: .* from t_order_(\d) as o join t_order_item_(\d) as i `).FindStringSubmatch(join)
	if assert.NotNil(t, m, join) {
		assert.Equal(t, m[1], m[2], "bound tables of one suffix")
	}
	assert.Equal(t, []string{"pen", "ink"}, column(join, 2))
	assert.Contains(t, join, "ran on ds_1-replica1×1 (replica×1)")

	// 6. Each refusal with its error, sent nowhere.
	refused := step(t, out, 6)
	for _, e := range []struct{ stmt, symbol, msg string }{
		{"UPDATE t_order SET status = 'cancelled' WHERE status = 'new'", "ErrNoShardKey", "no shard key"},
		{"UPDATE t_order SET user_id = 4 WHERE", "ErrShardKeyUpdate", "update of a sharding column"},
		{"SELECT c.name, o.order_id, o.amount FROM t_order o JOIN t_customer c", "ErrCrossShardJoin", "join across shards"},
	} {
		assert.Regexp(t, regexp.QuoteMeta(e.stmt)+`.*\n    errors.Is\(err, shard.`+e.symbol+`\) is true; ran on no node\n    rwshard: shard: `+e.msg, refused)
	}

	// 7. Stats: every read on a replica.
	stats := step(t, out, 7)
	assert.Contains(t, stats, "reads 12, served by a primary 0 (0%)")
	assert.Regexp(t, `(?m)^  ds_0-replica1 +replica up=true +queries=6$`, stats)
	assert.Regexp(t, `(?m)^  ds_1-replica1 +replica up=true +queries=6$`, stats)
}

// rulesFile writes rules.yaml.tmpl with the DSNs of l's groups filled in,
// as scripts/demo does, into a temporary file and returns its path.
func rulesFile(t *testing.T, l *lab.Lab) string {
	t.Helper()
	tmpl, err := os.ReadFile("rules.yaml.tmpl")
	require.NoError(t, err)
	var pairs []string
	for i, g := range l.Groups {
		require.Equal(t, fmt.Sprintf("ds_%d", i), g.Name)
		var replicas []string
		for _, r := range g.Replicas() {
			replicas = append(replicas, strconv.Quote(r.DSN("")))
		}
		pairs = append(pairs,
			fmt.Sprintf("@DS_%d_PRIMARY@", i), g.Primary().DSN(""),
			fmt.Sprintf("@DS_%d_REPLICAS@", i), strings.Join(replicas, ", "))
	}
	rules := strings.NewReplacer(pairs...).Replace(string(tmpl))
	require.NotContains(t, rules, "@DS_", "a placeholder left")
	path := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(rules), 0o600))
	return path
}

// placement checks, on the primaries directly, that every row of t_order
// is in ds_(user_id % 2).t_order_(order_id % 2), and that there are want.
func placement(t *testing.T, l *lab.Lab, want int) {
	t.Helper()
	ctx := labtest.Ctx(t, time.Minute)
	total := 0
	for gi, g := range l.Groups {
		db, err := sql.Open("mysql", g.Primary().DSN(""))
		require.NoError(t, err)
		defer db.Close()
		for ti := range 2 {
			rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT order_id, user_id FROM t_order_%d", ti))
			require.NoError(t, err)
			for rows.Next() {
				var id, user int64
				require.NoError(t, rows.Scan(&id, &user))
				total++
				assert.True(t, user%2 == int64(gi) && id%2 == int64(ti), "order %d of user %d is in %s.t_order_%d", id, user, g.Name, ti)
			}
			require.NoError(t, rows.Err())
			rows.Close()
		}
	}
	assert.Equal(t, want, total, "rows in all physical tables")
}

// step returns the paragraph of out that starts with "n. ".
func step(t *testing.T, out string, n int) string {
	t.Helper()
	for _, b := range strings.Split(out, "\n\n") {
		if strings.HasPrefix(b, fmt.Sprintf("%d. ", n)) {
			return b
		}
	}
	t.Fatalf("no step %d in\n%s", n, out)
	return ""
}

// part returns the lines of a step from the one that starts with
// "  "+title to the next line indented by two spaces only.
func part(t *testing.T, s, title string) string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		top := strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ")
		switch {
		case top && strings.HasPrefix(line, "  "+title):
			lines = append(lines, line)
		case top && len(lines) > 0:
			return strings.Join(lines, "\n")
		case len(lines) > 0:
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("no part %q in\n%s", title, s)
	}
	return strings.Join(lines, "\n")
}

// rowsOf returns the result rows of a read's part: the lines indented by
// six spaces after the header, split into fields.
func rowsOf(part string) [][]string {
	var out [][]string
	header := true
	for _, line := range strings.Split(part, "\n") {
		if !strings.HasPrefix(line, "      ") || strings.Contains(line, " on ds_") {
			continue
		}
		if header {
			header = false
			continue
		}
		out = append(out, strings.Fields(line))
	}
	return out
}

// column returns one column of a read's result.
func column(part string, i int) []string {
	var out []string
	for _, r := range rowsOf(part) {
		out = append(out, r[i])
	}
	return out
}

func cents(amount string) int {
	whole, frac, _ := strings.Cut(amount, ".")
	w, _ := strconv.Atoi(whole)
	f, _ := strconv.Atoi(frac)
	return 100*w + f
}
