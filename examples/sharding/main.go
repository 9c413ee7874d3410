// Command sharding runs an order service sharded through rwshard over two
// replication groups, ds_0 and ds_1 (each a primary and its replicas),
// and prints what went where:
//
//  1. the sharding rules, read from the rules file: t_order and
//     t_order_item by user_id % 2 over the data sources and order_id % 2
//     over the tables, bound together; t_region broadcast; snowflake keys
//     for t_order.order_id; t_customer unsharded, in the default data
//     source ds_0;
//
//  2. CREATE TABLE on the logical tables, and the physical tables that
//     now exist on every node;
//
//  3. a multi-row INSERT without order_id: rwshard generates the keys and
//     splits the rows by shard;
//
//  4. reads from one shard, from one data source and from every shard
//     (ORDER BY … LIMIT, GROUP BY), each with its plan (rwshard.Explain)
//     and the node that ran it: each shard's replica;
//
//  5. a transaction over both data sources;
//
//  6. statements rwshard refuses rather than run them wrong;
//
//  7. Stats: writes on each shard's primary, reads on its replica.
//
// The rules file names the data sources' DSNs (the database of each is
// its DSN's); sharding/rules.yaml.tmpl is these rules with placeholders
// for them. Copy it, write your groups' DSNs in place of the @…@
// placeholders, and run
//
//	go run ./sharding -rules rules.yaml
//
// (or RWSHARD_RULES in the environment; `make demo` starts a sharded lab
// and writes the rules file for it). Besides rwshard, the program
// connects to every node directly (go-sql-driver/mysql, the data
// sources' DSNs) to show the physical tables. It drops and creates the
// tables t_order, t_order_item, t_region and t_customer: point it at
// scratch databases.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/shard"
)

// The logical tables. t_order_item has no key generator: its key is the
// order's key and the item's number.
const (
	createOrder = "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, " +
		"region_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL, status VARCHAR(12) NOT NULL)"
	createItem = "CREATE TABLE t_order_item (order_id BIGINT NOT NULL, user_id INT NOT NULL, " +
		"item_no INT NOT NULL, sku VARCHAR(20) NOT NULL, qty INT NOT NULL, PRIMARY KEY (order_id, item_no))"
	createRegion   = "CREATE TABLE t_region (region_id INT PRIMARY KEY, name VARCHAR(20) NOT NULL)"
	createCustomer = "CREATE TABLE t_customer (user_id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)"
)

// Order is one row of the multi-row INSERT.
type Order struct {
	User   int
	Region int
	Amount string
	Status string
}

// Orders are inserted by one multi-row INSERT, two per user: users 1 and
// 3 live in ds_1, users 2 and 4 in ds_0.
var Orders = []Order{
	{1, 1, "25.00", "paid"}, {1, 2, "7.25", "new"},
	{2, 1, "12.50", "new"}, {2, 3, "63.00", "paid"},
	{3, 2, "99.90", "paid"}, {3, 3, "18.40", "shipped"},
	{4, 1, "40.00", "shipped"}, {4, 2, "5.00", "new"},
}

func main() {
	rules := flag.String("rules", os.Getenv("RWSHARD_RULES"), "sharding rules file (rwshard's YAML), see sharding/rules.yaml.tmpl")
	flag.Parse()
	if *rules == "" {
		fmt.Fprintln(os.Stderr, "sharding: give -rules or RWSHARD_RULES")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *rules); err != nil {
		fmt.Fprintln(os.Stderr, "sharding:", err)
		os.Exit(1)
	}
}

// demo carries what every step needs.
type demo struct {
	ctx    context.Context
	out    io.Writer
	db     *sql.DB             // rwshard, sharded
	c      *rwshard.Connector  // behind db, for Stats
	groups []group             // the data sources, by name
	direct map[string]*sql.DB  // go-sql-driver/mysql to each node, by node name
	last   rwshard.Stats       // at the end of the previous statement
	placed map[string][]placed // step 3's rows, by "user/amount"
}

// group is one data source: the names rwshard gives its nodes.
type group struct {
	name     string
	primary  string   // "ds_0-primary"
	replicas []string // "ds_0-replica1", …
}

// placed is a row of t_order as found in a physical table.
type placed struct {
	OrderID int64
	User    int
	Amount  string
	Node    string // ds_N.t_order_M
}

// run is the example on the data sources of the rules file at path.
func run(ctx context.Context, out io.Writer, path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n1. the sharding rules, read from %s\n", path)
	for line := range strings.Lines(redact(string(text))) {
		fmt.Fprint(out, "  ", line)
	}

	dsn := "/?rwshard.rulesFile=" + url.QueryEscape(path)
	fmt.Fprintln(out, `  db, err := sql.Open("rwshard", "/?rwshard.rulesFile="+url.QueryEscape(path))`)
	db, err := sql.Open(rwshard.DriverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(ctx, db)
	if err != nil {
		return err
	}
	d := &demo{ctx: ctx, out: out, db: db, c: c, direct: map[string]*sql.DB{}, last: c.Stats()}
	defer func() {
		for _, ndb := range d.direct {
			ndb.Close()
		}
	}()
	if err := d.connectNodes(dsn); err != nil {
		return err
	}
	for _, step := range []func() error{d.schema, d.insert, d.reads, d.transaction, d.refusals} {
		if err := step(); err != nil {
			return err
		}
	}
	d.stats()
	return nil
}

// connectNodes opens go-sql-driver/mysql to every node of the rules' data
// sources, with the names and settings that rwshard's own connectors give
// them (shard.DataSourceConfigs).
func (d *demo) connectNodes(dsn string) error {
	cfg, err := rwshard.ParseDSN(dsn)
	if err != nil {
		return err
	}
	sources, err := shard.DataSourceConfigs(cfg)
	if err != nil {
		return err
	}
	for name, sc := range sources {
		g := group{name: name}
		for i, n := range sc.Nodes {
			mc := sc.Backend.Clone()
			mc.Net, mc.Addr = n.Net, n.Addr
			connector, err := mysql.NewConnector(mc)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			d.direct[n.Name] = sql.OpenDB(connector)
			if i == 0 {
				g.primary = n.Name
			} else {
				g.replicas = append(g.replicas, n.Name)
			}
		}
		d.groups = append(d.groups, g)
	}
	slices.SortFunc(d.groups, func(a, b group) int { return cmp.Compare(a.name, b.name) })
	return nil
}

// group returns the data source of that name.
func (d *demo) group(name string) (group, error) {
	for _, g := range d.groups {
		if g.name == name {
			return g, nil
		}
	}
	return group{}, fmt.Errorf("no data source %s in the rules", name)
}

// nodes lists every node, each data source's primary first.
func (d *demo) nodes() []string {
	var out []string
	for _, g := range d.groups {
		out = append(out, g.primary)
		out = append(out, g.replicas...)
	}
	return out
}

// syncReplicas waits until every replica has applied what its primary had
// written when it was called, reading the GTID position on the primary
// and waiting for it on the replica (MariaDB's MASTER_GTID_WAIT; MySQL's
// WAIT_FOR_EXECUTED_GTID_SET), both over the direct connections: so that
// what the example reads from the replicas directly, and the nodes it
// shows for the reads through rwshard, do not depend on replication's
// timing.
func (d *demo) syncReplicas() error {
	const timeout = 20 * time.Second
	for _, g := range d.groups {
		p := d.direct[g.primary]
		var version string
		if err := p.QueryRowContext(d.ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return fmt.Errorf("%s: %w", g.primary, err)
		}
		posQuery, waitQuery := "SELECT @@gtid_binlog_pos", "SELECT MASTER_GTID_WAIT(?, ?)"
		if !strings.Contains(version, "MariaDB") {
			posQuery, waitQuery = "SELECT @@GLOBAL.gtid_executed", "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
		}
		var pos string
		if err := p.QueryRowContext(d.ctx, posQuery).Scan(&pos); err != nil {
			return fmt.Errorf("%s: %w", g.primary, err)
		}
		for _, r := range g.replicas {
			var res int
			if err := d.direct[r].QueryRowContext(d.ctx, waitQuery, pos, timeout.Seconds()).Scan(&res); err != nil {
				return fmt.Errorf("%s: %w", r, err)
			}
			if res != 0 {
				return fmt.Errorf("%s has not applied GTID %s of %s within %s", r, pos, g.primary, timeout)
			}
		}
	}
	return nil
}

// schema creates the logical tables through rwshard and lists the
// physical tables each node then has.
func (d *demo) schema() error {
	fmt.Fprintln(d.out, "\n2. CREATE TABLE through rwshard, on the logical tables: DDL reaches every data node of the table")
	// An earlier run's tables go first.
	for _, t := range []string{"t_order_item", "t_order", "t_region", "t_customer"} {
		if _, err := d.db.ExecContext(d.ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.out, "  %-50s → ran on %s\n", "DROP TABLE IF EXISTS t_order_item, … (×4, one each)", d.ran())
	for _, ddl := range []string{createOrder, createItem, createRegion, createCustomer} {
		p, err := rwshard.Explain(d.ctx, d.db, ddl)
		if err != nil {
			return err
		}
		if _, err := d.db.ExecContext(d.ctx, ddl); err != nil {
			return err
		}
		d.ran()
		var where []string
		for _, u := range p.Units {
			where = append(where, u.DataSource+"."+tableOf(u.Plan.SQL))
		}
		head, _, _ := strings.Cut(ddl, " (")
		fmt.Fprintf(d.out, "  %-30s %-19s → %s\n", head+" (…)", p.Reason, strings.Join(where, " "))
	}
	for _, w := range []struct{ label, q string }{
		{"INSERT INTO t_region … ×3", "INSERT INTO t_region (region_id, name) VALUES (1, 'north'), (2, 'south'), (3, 'west')"},
		{"INSERT INTO t_customer … ×4", "INSERT INTO t_customer (user_id, name) VALUES (1, 'ada'), (2, 'grace'), (3, 'linus'), (4, 'barbara')"},
	} {
		p, err := rwshard.Explain(d.ctx, d.db, w.q)
		if err != nil {
			return err
		}
		if _, err := d.db.ExecContext(d.ctx, w.q); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %-30s %-19s → ran on %s\n", w.label, p.Reason, d.ran())
	}
	// The replicas get the DDL by replication.
	if err := d.syncReplicas(); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "  physical tables, read from every node with go-sql-driver/mysql:")
	for _, n := range d.nodes() {
		tables, err := d.tables(n)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "    %-14s %s\n", n, strings.Join(tables, " "))
	}
	return nil
}

// tables lists the tables of the application database on one node.
func (d *demo) tables(node string) ([]string, error) {
	rows, err := d.direct[node].QueryContext(d.ctx,
		"SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name")
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, t)
	}
	rows.Close()
	return out, rows.Err()
}

// insert writes Orders with one multi-row INSERT that leaves order_id to
// the snowflake key generator, then finds every row in its physical table.
func (d *demo) insert() error {
	fmt.Fprintln(d.out, "\n3. one multi-row INSERT without order_id: snowflake keys, rows split by shard")
	rowPH := "(?, ?, ?, ?)"
	q := "INSERT INTO t_order (user_id, region_id, amount, status) VALUES " + strings.Repeat(rowPH+", ", len(Orders)-1) + rowPH
	var args []any
	for _, o := range Orders {
		args = append(args, o.User, o.Region, o.Amount, o.Status)
	}
	fmt.Fprintf(d.out, "  %s ×%d (users 1–4, two orders each)\n", q[:strings.Index(q, "),")+1], len(Orders))
	p, err := rwshard.Explain(d.ctx, d.db, q, args...)
	if err != nil {
		return err
	}
	d.units(p)
	res, err := d.db.ExecContext(d.ctx, q, args...)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	first, _ := res.LastInsertId()
	fmt.Fprintf(d.out, "  RowsAffected %d, LastInsertId %d (the first row's key); ran on %s\n", n, first, d.ran())

	fmt.Fprintln(d.out, "  where the rows are, read from each primary with go-sql-driver/mysql:")
	d.placed = map[string][]placed{}
	var all []placed
	for _, g := range d.groups {
		for t := range 2 {
			rows, err := d.direct[g.primary].QueryContext(d.ctx,
				fmt.Sprintf("SELECT order_id, user_id, amount FROM t_order_%d", t))
			if err != nil {
				return err
			}
			for rows.Next() {
				p := placed{Node: fmt.Sprintf("%s.t_order_%d", g.name, t)}
				if err := rows.Scan(&p.OrderID, &p.User, &p.Amount); err != nil {
					rows.Close()
					return err
				}
				all = append(all, p)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
	}
	slices.SortFunc(all, func(a, b placed) int { return cmp.Compare(a.OrderID, b.OrderID) })
	for _, p := range all {
		key := fmt.Sprintf("%d/%s", p.User, p.Amount)
		d.placed[key] = append(d.placed[key], p)
		mark := ""
		if p.OrderID == first {
			mark = "  ← LastInsertId"
		}
		fmt.Fprintf(d.out, "    order_id %d  user_id %d  %6s  in %s  (user_id %% 2 = %d, order_id %% 2 = %d)%s\n",
			p.OrderID, p.User, p.Amount, p.Node, p.User%2, p.OrderID%2, mark)
	}
	return nil
}

// reads runs a read from one shard, from one data source and from every
// shard, printing the plan, the result and the node that ran each unit.
func (d *demo) reads() error {
	fmt.Fprintln(d.out, "\n4. reads: each unit on its shard's replica, multi-shard results merged")
	if err := d.syncReplicas(); err != nil {
		return err
	}
	big := d.placed["3/99.90"]
	if len(big) != 1 {
		return fmt.Errorf("user 3's order of 99.90: found %d", len(big))
	}
	for _, r := range []struct {
		title, q string
		args     []any
	}{
		{"one shard: one order of user 3, joined with the broadcast table t_region",
			"SELECT o.order_id, o.amount, o.status, r.name AS region FROM t_order o JOIN t_region r ON r.region_id = o.region_id " +
				"WHERE o.user_id = ? AND o.order_id = ?", []any{3, big[0].OrderID}},
		{"one data source: user 2's orders (both of ds_0's tables)",
			"SELECT order_id, amount, status FROM t_order WHERE user_id = ? ORDER BY amount DESC", []any{2}},
		{"every shard: the 3 largest orders",
			"SELECT user_id, order_id, amount FROM t_order ORDER BY amount DESC LIMIT 3", nil},
		{"every shard: orders and totals by status",
			"SELECT status, COUNT(*) AS orders, SUM(amount) AS total FROM t_order GROUP BY status ORDER BY status", nil},
	} {
		fmt.Fprintf(d.out, "  %s\n    %s%s\n", r.title, r.q, argList(r.args))
		if err := d.read(r.q, r.args...); err != nil {
			return err
		}
	}
	return nil
}

// read explains q, runs it, prints the plan's units, the result and
// where it ran.
func (d *demo) read(q string, args ...any) error {
	p, err := rwshard.Explain(d.ctx, d.db, q, args...)
	if err != nil {
		return err
	}
	d.units(p)
	cols, rows, err := queryStrings(d.ctx, d.db, q, args...)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "      %s\n", strings.Join(cols, "\t"))
	for _, row := range rows {
		fmt.Fprintf(tw, "      %s\n", strings.Join(row, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(d.out, "    ran on %s\n", d.ran())
	return nil
}

// units prints a plan's reason and its units: data source, the nodes that
// may run the unit (for a read, the replicas that qualify now) and the
// rewritten SQL.
func (d *demo) units(p rwshard.Plan) {
	units := "units"
	if len(p.Units) == 1 {
		units = "unit"
	}
	fmt.Fprintf(d.out, "    Explain: %s, %d %s\n", p.Reason, len(p.Units), units)
	for _, u := range p.Units {
		fmt.Fprintf(d.out, "      %s on %s: %s\n", u.DataSource, strings.Join(u.Plan.Targets, ","), compactValues(u.Plan.SQL))
	}
}

// transaction writes an order with its items for two users on different
// data sources in one transaction, then checks both primaries directly.
func (d *demo) transaction() error {
	fmt.Fprintln(d.out, "\n5. a transaction over both data sources: an order with its items for user 5 (ds_1) and user 6 (ds_0)")
	tx, err := d.db.BeginTx(d.ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	keys := map[int]int64{}
	for _, u := range []struct {
		user   int
		amount string
		sku    [2]string
	}{{5, "31.50", [2]string{"pen", "ink"}}, {6, "12.00", [2]string{"paper", "clips"}}} {
		res, err := tx.ExecContext(d.ctx, "INSERT INTO t_order (user_id, region_id, amount, status) VALUES (?, 1, ?, 'paid')", u.user, u.amount)
		if err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		keys[u.user] = id
		if _, err := tx.ExecContext(d.ctx, "INSERT INTO t_order_item (order_id, user_id, item_no, sku, qty) VALUES (?, ?, 1, ?, 2), (?, ?, 2, ?, 1)",
			id, u.user, u.sku[0], id, u.user, u.sku[1]); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "  BEGIN; INSERT INTO t_order …; INSERT INTO t_order_item … (×2 users); COMMIT")
	fmt.Fprintf(d.out, "  ran on %s: one local transaction per data source, committed in turn\n", d.ran())
	fmt.Fprintln(d.out, "  committed, read from each primary with go-sql-driver/mysql:")
	for _, user := range []int{5, 6} {
		id := keys[user]
		g, err := d.group(fmt.Sprintf("ds_%d", user%2)) // databaseStrategy: user_id % 2
		if err != nil {
			return err
		}
		var orders, items int
		err = d.direct[g.primary].QueryRowContext(d.ctx, fmt.Sprintf(
			"SELECT (SELECT COUNT(*) FROM t_order_%[1]d WHERE order_id = ?), (SELECT COUNT(*) FROM t_order_item_%[1]d WHERE order_id = ?)", id%2),
			id, id).Scan(&orders, &items)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "    %s: order %d of user %d: %d row in t_order_%d, %d rows in t_order_item_%d\n",
			g.primary, id, user, orders, id%2, items, id%2)
	}
	if err := d.syncReplicas(); err != nil {
		return err
	}
	q := "SELECT o.order_id, i.item_no, i.sku, i.qty FROM t_order o JOIN t_order_item i ON i.order_id = o.order_id " +
		"WHERE o.user_id = ? AND o.order_id = ? ORDER BY i.item_no"
	fmt.Fprintf(d.out, "  binding tables join inside one shard\n    %s%s\n", q, argList([]any{5, keys[5]}))
	return d.read(q, 5, keys[5])
}

// refusals shows statements rwshard refuses, before sending anything.
func (d *demo) refusals() error {
	fmt.Fprintln(d.out, "\n6. refused, not sent anywhere: these would need rows to move or data from several shards joined")
	for _, r := range []struct {
		q      string
		args   []any
		query  bool
		want   error
		symbol string
	}{
		{"UPDATE t_order SET status = 'cancelled' WHERE status = 'new'", nil, false, shard.ErrNoShardKey, "shard.ErrNoShardKey"},
		{"UPDATE t_order SET user_id = 4 WHERE user_id = 2 AND order_id = ?", []any{d.placed["2/12.50"][0].OrderID}, false,
			shard.ErrShardKeyUpdate, "shard.ErrShardKeyUpdate"},
		{"SELECT c.name, o.order_id, o.amount FROM t_order o JOIN t_customer c ON c.user_id = o.user_id", nil, true,
			shard.ErrCrossShardJoin, "shard.ErrCrossShardJoin"},
	} {
		var err error
		if r.query {
			var rows *sql.Rows
			if rows, err = d.db.QueryContext(d.ctx, r.q, r.args...); err == nil {
				rows.Close()
			}
		} else {
			_, err = d.db.ExecContext(d.ctx, r.q, r.args...)
		}
		if !errors.Is(err, r.want) {
			return fmt.Errorf("%s: want %s, got %v", r.q, r.symbol, err)
		}
		fmt.Fprintf(d.out, "  %s\n    errors.Is(err, %s) is true; ran on %s\n    %v\n", r.q, r.symbol, d.ran(), err)
	}
	return nil
}

// stats prints the connector's Stats: every node of every data source.
func (d *demo) stats() {
	s := d.c.Stats()
	fmt.Fprintln(d.out, "\n7. rwshard.ConnectorOf(ctx, db).Stats(): the nodes of every data source")
	for _, n := range s.Nodes {
		role := "replica"
		if n.Primary {
			role = "primary"
		}
		fmt.Fprintf(d.out, "  %-14s %-7s up=%-5v queries=%d\n", n.Name, role, n.Up, n.Queries)
	}
	reasons := make([]string, 0, len(s.Routes))
	for r, v := range s.Routes {
		reasons = append(reasons, fmt.Sprintf("%s×%d", r, v))
	}
	slices.Sort(reasons)
	fmt.Fprintf(d.out, "  routes: %s\n", strings.Join(reasons, " "))
	fmt.Fprintf(d.out, "  reads %d, served by a primary %d (%.0f%%)\n", s.Reads, s.PrimaryReads, 100*s.PrimaryReadShare)
}

// ran names the nodes that ran statements since the previous call, from
// the change in Stats, with the routing reasons inside each data source.
func (d *demo) ran() string {
	now := d.c.Stats()
	before := map[string]uint64{}
	for _, n := range d.last.Nodes {
		before[n.Name] = n.Queries
	}
	var nodes []string
	for _, n := range now.Nodes {
		if v := n.Queries - before[n.Name]; v > 0 {
			nodes = append(nodes, fmt.Sprintf("%s×%d", n.Name, v))
		}
	}
	var reasons []string
	for r, v := range now.Routes {
		if v -= d.last.Routes[r]; v > 0 {
			reasons = append(reasons, fmt.Sprintf("%s×%d", r, v))
		}
	}
	slices.Sort(reasons)
	d.last = now
	if len(nodes) == 0 {
		return "no node"
	}
	return strings.Join(nodes, " ") + " (" + strings.Join(reasons, " ") + ")"
}

// queryStrings runs q on db and returns the column names and the rows as
// strings ("NULL" for NULL).
func queryStrings(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, [][]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
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
	return cols, out, rows.Err()
}

// tableOf is the table a CREATE TABLE statement creates.
func tableOf(ddl string) string {
	f := strings.Fields(ddl)
	if len(f) < 3 {
		return "?"
	}
	return strings.Trim(f[2], "`(")
}

// compactValues writes the rows of a multi-row INSERT as one row ×n.
func compactValues(q string) string {
	lower := strings.ToLower(q)
	i := strings.Index(lower, " values (")
	if !strings.HasPrefix(lower, "insert") || i < 0 {
		return q
	}
	values := q[i+len(" values "):]
	first, _, _ := strings.Cut(values, ")")
	return fmt.Sprintf("%s%s) ×%d", q[:i+len(" values ")], first, strings.Count(values, "("))
}

func argList(args []any) string {
	if len(args) == 0 {
		return ""
	}
	return fmt.Sprintf("  %v", args)
}

var password = regexp.MustCompile(`([^"/@:\s]+):[^@"\n]*@`)

// redact hides the passwords of the DSNs in the rules.
func redact(s string) string { return password.ReplaceAllString(s, "$1:***@") }
