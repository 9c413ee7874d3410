package rwshard_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// Tier (b): routing decisions and error paths over go-sqlmock backends.
// See mock_helpers_test.go for how a test proves where a statement ran.

// ---------------------------------------------------------------------
// 1. Routing by statement class

func TestMockRoutingByStatementClass(t *testing.T) {
	const (
		primary = "primary"
		replica = "replica1" // round robin's first pick on a fresh cluster
	)
	tests := []struct {
		name string
		sql  string
		exec bool // sent with ExecContext, else QueryContext
		want string
	}{
		// Plain reads: a replica.
		{"select", "SELECT v FROM t WHERE id = 1", false, replica},
		{"select join", "SELECT a.v, b.w FROM a JOIN b ON a.id = b.id", false, replica},
		{"parenthesized select", "(SELECT v FROM t)", false, replica},
		{"union", "SELECT v FROM t UNION ALL SELECT v FROM u", false, replica},
		{"with select", "WITH c AS (SELECT 1 AS x) SELECT x FROM c", false, replica},
		{"with recursive", "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r", false, replica},
		{"show tables", "SHOW TABLES", false, replica},
		{"show create table", "SHOW CREATE TABLE t", false, replica},
		{"describe", "DESCRIBE t", false, replica},
		{"explain select", "EXPLAIN SELECT v FROM t", false, replica},
		{"lower case", "select v from t", false, replica},
		{"leading comment", "/* list */ SELECT v FROM t", false, replica},
		{"select through Exec", "SELECT v FROM t", true, replica},
		{"multi-statement all reads", "SELECT 1; SELECT 2", false, replica},

		// Writes, DDL, CALL: the primary.
		{"insert", "INSERT INTO t (v) VALUES (1)", true, primary},
		{"insert select", "INSERT INTO t (v) SELECT v FROM u", true, primary},
		{"update", "UPDATE t SET v = 2 WHERE id = 1", true, primary},
		{"delete", "DELETE FROM t WHERE id = 1", true, primary},
		{"replace", "REPLACE INTO t (id, v) VALUES (1, 2)", true, primary},
		{"create table", "CREATE TABLE t2 (id INT PRIMARY KEY)", true, primary},
		{"alter table", "ALTER TABLE t ADD COLUMN w INT", true, primary},
		{"drop table", "DROP TABLE t2", true, primary},
		{"truncate", "TRUNCATE TABLE t", true, primary},
		{"create index", "CREATE INDEX i ON t (v)", true, primary},
		{"call", "CALL refresh_totals()", true, primary},
		{"load data", "LOAD DATA LOCAL INFILE 'x.csv' INTO TABLE t", true, primary},
		{"select into outfile", "SELECT v INTO OUTFILE '/tmp/v' FROM t", false, primary},

		// Locking and session-bound reads: the primary.
		{"for update", "SELECT v FROM t WHERE id = 1 FOR UPDATE", false, primary},
		{"for update nowait", "SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT", false, primary},
		{"for share", "SELECT v FROM t WHERE id = 1 FOR SHARE", false, primary},
		{"for update skip locked", "SELECT v FROM t FOR UPDATE SKIP LOCKED", false, primary},
		{"lock in share mode", "SELECT v FROM t WHERE id = 1 LOCK IN SHARE MODE", false, primary},
		{"last_insert_id", "SELECT LAST_INSERT_ID()", false, primary},
		{"found_rows", "SELECT FOUND_ROWS()", false, primary},
		{"row_count", "SELECT ROW_COUNT()", false, primary},
		{"next value for", "SELECT NEXT VALUE FOR seq", false, primary},
		{"is_free_lock", "SELECT IS_FREE_LOCK('x')", false, primary},
		{"show warnings", "SHOW WARNINGS", false, primary},

		// Classified by text, not by method: RETURNING through Query.
		{"insert returning through Query", "INSERT INTO t (v) VALUES (1) RETURNING id", false, primary},
		{"delete returning through Query", "DELETE FROM t WHERE id = 1 RETURNING id", false, primary},
		{"replace returning through Query", "REPLACE INTO t (id, v) VALUES (1, 2) RETURNING id", false, primary},

		// Multi-statement strings with anything but reads: the primary.
		{"multi read then write", "SELECT 1; UPDATE t SET v = 1", true, primary},
		{"multi write then read", "UPDATE t SET v = 1; SELECT v FROM t", false, primary},
		{"multi read then locking read", "SELECT 1; SELECT v FROM t FOR UPDATE", false, primary},

		// Unknown means primary.
		{"garbage", "FROBNICATE the widgets", true, primary},
		{"garbage through Query", "FROBNICATE the widgets", false, primary},
		{"unterminated string", "SELECT 'oops FROM t", false, primary},
		{"unterminated comment", "SELECT v FROM t /* never closed", false, primary},
		{"select then garbage", "SELECT 1; FROBNICATE", false, primary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mockRoutesTo(t, context.Background(), tt.sql, tt.exec, tt.want)
		})
	}
}

// mockRoutesTo sends q with ctx (with ExecContext when exec, else with
// QueryContext) to rwshard over a primary and two replicas, of which only
// the node named want expects it, unchanged, and requires that it ran
// there and nowhere else.
func mockRoutesTo(t *testing.T, ctx context.Context, q string, exec bool, want string) {
	t.Helper()
	mc := newMockCluster(t, 2)
	mc.node(want).expect(q, exec)
	mc.ranOn(ctx, mc.db, want, q, exec)
	mc.verify()
}

// With no replica configured, reads fall back to the primary.
func TestMockRoutingNoReplicas(t *testing.T) {
	mc := newMockCluster(t, 0)
	mc.primary().expectRead("SELECT v FROM t")
	mc.ranOn(context.Background(), mc.db, "primary", "SELECT v FROM t", false)
	mc.verify()
}

// ---------------------------------------------------------------------
// 2. Balancing

func TestMockRoundRobinAlternates(t *testing.T) {
	mc := newMockCluster(t, 2)
	ctx := context.Background()
	const n = 10
	var want []string
	for i := range n {
		r := mc.nodes[1+i%2]
		r.expectRead("SELECT v FROM t")
		want = append(want, r.name)
	}
	var got []string
	for range n {
		name, err := mockRead(ctx, mc.db, "SELECT v FROM t")
		require.NoError(t, err)
		got = append(got, name)
	}
	assert.Equal(t, want, got)
	assert.Equal(t, mc.idle(), mc.busy())
}

// Concurrent reads: the round-robin counter is shared, so the split is
// exact however the goroutines interleave, and every backend connection
// comes back.
func TestMockRoundRobinConcurrent(t *testing.T) {
	mc := newMockCluster(t, 2)
	const n = 200
	for _, r := range mc.nodes[1:] {
		for range n / 2 {
			r.expectRead("SELECT v FROM t")
		}
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
		errs   []error
	)
	for range n {
		wg.Go(func() {
			name, err := mockRead(context.Background(), mc.db, "SELECT v FROM t")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			counts[name]++
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	assert.Equal(t, map[string]int{"replica1": n / 2, "replica2": n / 2}, counts)
	assert.Equal(t, mc.idle(), mc.busy())
}

// Smooth weighted round robin is exact: 3:1 over 400 reads is 300/100,
// interleaved r1 r1 r2 r1.
func TestMockWeighted(t *testing.T) {
	tests := []struct {
		name    string
		weights map[string]float64
		want    map[string]int // reads per node over 400
		pattern []string       // first picks
	}{
		{
			name:    "3 to 1",
			weights: map[string]float64{"replica1": 3, "replica2": 1},
			want:    map[string]int{"replica1": 300, "replica2": 100},
			pattern: []string{"replica1", "replica1", "replica2", "replica1", "replica1", "replica1", "replica2", "replica1"},
		},
		{
			name:    "zero weight never read",
			weights: map[string]float64{"replica1": 0, "replica2": 1},
			want:    map[string]int{"replica2": 400},
		},
		{
			name:    "primary takes a share",
			weights: map[string]float64{"primary": 1, "replica1": 1, "replica2": 2},
			want:    map[string]int{"primary": 100, "replica1": 100, "replica2": 200},
		},
		{
			name:    "primary weight 0 takes none",
			weights: map[string]float64{"primary": 0, "replica1": 1, "replica2": 1},
			want:    map[string]int{"replica1": 200, "replica2": 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 2, func(c *rwshard.Config) { c.Balance, c.Weights = "weighted", tt.weights })
			ctx := context.Background()
			const total = 400
			// Order of expectations across mocks does not matter: each
			// mock is ordered on its own and all reads are the same text.
			for name, k := range tt.want {
				for range k {
					mc.node(name).expectRead("SELECT v FROM t")
				}
			}
			counts := map[string]int{}
			var seq []string
			for range total {
				name, err := mockRead(ctx, mc.db, "SELECT v FROM t")
				require.NoError(t, err)
				counts[name]++
				seq = append(seq, name)
			}
			assert.Equal(t, tt.want, counts, "exact shares (tolerance 0: SWRR is exact)")
			if tt.pattern != nil {
				assert.Equal(t, tt.pattern, seq[:len(tt.pattern)])
			}
			mc.verify()
		})
	}
}

func TestMockOpenDBConfigErrors(t *testing.T) {
	p := newMockNode(t, 0, driver.DefaultParameterConverter)
	r1 := newMockNode(t, 1, driver.DefaultParameterConverter)
	r2 := newMockNode(t, 2, driver.DefaultParameterConverter)
	tests := []struct {
		name      string
		primary   *sql.DB
		replicas  []*sql.DB
		opts      []func(*rwshard.Config)
		wantKey   string
		wantValue string
		mention   []string // substrings the message must contain
	}{
		{"nil primary", nil, []*sql.DB{r1.db}, nil, "primary", "", []string{"nil"}},
		{"nil replica", p.db, []*sql.DB{r1.db, nil}, nil, "replicas", "replica2", []string{"replica2"}},
		{"weight for unknown node", p.db, []*sql.DB{r1.db, r2.db},
			[]func(*rwshard.Config){func(c *rwshard.Config) {
				c.Balance, c.Weights = "weighted", map[string]float64{"replica1": 1, "replica3": 1}
			}},
			"rwshard.weights", "replica3", []string{"replica3", "replica1", "replica2"}},
		{"missing weight", p.db, []*sql.DB{r1.db, r2.db},
			[]func(*rwshard.Config){func(c *rwshard.Config) { c.Balance, c.Weights = "weighted", map[string]float64{"replica1": 1} }},
			"rwshard.weights", "", []string{"replica2"}},
		{"negative weight", p.db, []*sql.DB{r1.db},
			[]func(*rwshard.Config){func(c *rwshard.Config) { c.Balance, c.Weights = "weighted", map[string]float64{"replica1": -1} }},
			"rwshard.weights", "replica1=-1", []string{"replica1"}},
		{"unknown balance", p.db, []*sql.DB{r1.db},
			[]func(*rwshard.Config){func(c *rwshard.Config) { c.Balance = "fastest" }},
			"rwshard.balance", "fastest", []string{"fastest", "round_robin"}},
		{"duplicate names", p.db, []*sql.DB{r1.db},
			[]func(*rwshard.Config){func(c *rwshard.Config) { c.Nodes[0].Name, c.Nodes[1].Name = "a", "a" }},
			"rwshard.names", "a", []string{"a"}},
		{"bad read-only tx mode", p.db, []*sql.DB{r1.db},
			[]func(*rwshard.Config){func(c *rwshard.Config) { c.ReadOnlyTx = "sometimes" }},
			"rwshard.readOnlyTx", "sometimes", []string{"sometimes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := rwshard.OpenDB(tt.primary, tt.replicas, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, db)
			var ce *rwshard.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantKey, ce.Key)
			assert.Equal(t, tt.wantValue, ce.Value)
			assert.True(t, strings.HasPrefix(err.Error(), "rwshard: "), err.Error())
			for _, s := range tt.mention {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
	// No failed OpenDB touched the handles.
	for _, n := range []*mockNode{p, r1, r2} {
		assert.NoError(t, n.mock.ExpectationsWereMet())
		assert.Zero(t, n.busy())
	}
}

// Nodes named through the Config are the names of hints and errors.
func TestMockNodeNames(t *testing.T) {
	mc := newMockCluster(t, 2, func(c *rwshard.Config) {
		for i, name := range []string{"main", "east", "west"} {
			c.Nodes[i].Name = name
		}
	})
	ctx := context.Background()
	mc.node("replica2").expectRead("SELECT v FROM t")
	mc.ranOn(hint.Node(ctx, "west"), mc.db, "replica2", "SELECT v FROM t", false) // the mock's own name
	_, err := mc.db.QueryContext(hint.Node(ctx, "replica2"), "SELECT v FROM t")
	var re *rwshard.RouteError
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, err, rwshard.ErrUnknownNode)
	assert.Contains(t, err.Error(), "main, east, west")
	mc.verify()
}

// ---------------------------------------------------------------------
// 3. Hints

func TestMockHintsRoute(t *testing.T) {
	tests := []struct {
		name string
		ctx  func(context.Context) context.Context
		sql  string
		exec bool
		want string
	}{
		{"context primary", hint.Primary, "SELECT v FROM t", false, "primary"},
		{"context node replica2", mockNodeHint("replica2"), "SELECT v FROM t", false, "replica2"},
		{"context node primary", mockNodeHint("primary"), "SELECT v FROM t", false, "primary"},
		{"context node primary write", mockNodeHint("primary"), "INSERT INTO t (v) VALUES (1)", true, "primary"},
		{"context replica on insert", hint.Replica, "INSERT INTO t (v) VALUES (1)", true, "primary"},
		{"context replica on locking read", hint.Replica, "SELECT v FROM t FOR UPDATE", false, "primary"},
		{"context replica on read", hint.Replica, "SELECT v FROM t", false, "replica1"},
		// Without probes (OpenDB's default) no replica's lag is known: a lag
		// bound cannot be proven, so the read goes to the primary.
		{"context max lag on read, lag unknown", mockMaxLagHint(time.Second), "SELECT v FROM t", false, "primary"},
		{"comment primary", nil, "/* rwshard:primary */ SELECT v FROM t", false, "primary"},
		{"comment primary mid-statement", nil, "SELECT /* rwshard:primary */ v FROM t", false, "primary"},
		{"comment primary upper case", nil, "/* RWSHARD:PRIMARY */ SELECT v FROM t", false, "primary"},
		{"comment node", nil, "/* rwshard:node=replica2 */ SELECT v FROM t", false, "replica2"},
		{"comment replica, max_lag, lag unknown", nil, "/* rwshard:replica, max_lag=500ms */ SELECT v FROM t", false, "primary"},
		{"shardingsphere write route only", nil, "/* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true */ SELECT v FROM t", false, "primary"},
		{"shardingsphere write route only false", nil, "/* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=false */ SELECT v FROM t", false, "replica1"},
		{"comment that is no hint", nil, "/* rw: primary */ SELECT v FROM t", false, "replica1"},
		{"context primary beats comment node", hint.Primary, "/* rwshard:node=replica2 */ SELECT v FROM t", false, "primary"},
		{"comment primary beats context node", mockNodeHint("replica2"), "/* rwshard:primary */ SELECT v FROM t", false, "primary"},
		{"comment node beats context node", mockNodeHint("replica1"), "/* rwshard:node=replica2 */ SELECT v FROM t", false, "replica2"},
		{"comment replica on write", nil, "/* rwshard:replica */ UPDATE t SET v = 1", true, "primary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Expected with its comment: the statement is sent unchanged.
			mockRoutesTo(t, mockCtx(tt.ctx), tt.sql, tt.exec, tt.want)
		})
	}
}

func mockNodeHint(name string) func(context.Context) context.Context {
	return func(ctx context.Context) context.Context { return hint.Node(ctx, name) }
}

func mockMaxLagHint(d time.Duration) func(context.Context) context.Context {
	return func(ctx context.Context) context.Context { return hint.MaxLag(ctx, d) }
}

// Hints that cannot be honoured fail before anything is sent.
func TestMockHintsRefused(t *testing.T) {
	tests := []struct {
		name     string
		ctx      func(context.Context) context.Context
		sql      string
		exec     bool
		wantIs   error  // sentinel wrapped by a *rwshard.RouteError
		wantNode string // RouteError.Node
		wantHint string // or: *hint.Error with this Item
	}{
		{"context unknown node", mockNodeHint("nope"), "SELECT v FROM t", false, rwshard.ErrUnknownNode, "nope", ""},
		{"context unknown node on exec", mockNodeHint("nope"), "SELECT v FROM t", true, rwshard.ErrUnknownNode, "nope", ""},
		{"comment unknown node", nil, "/* rwshard:node=nope */ SELECT v FROM t", false, rwshard.ErrUnknownNode, "nope", ""},
		{"context replica node on insert", mockNodeHint("replica1"), "INSERT INTO t (v) VALUES (1)", true, rwshard.ErrWriteToReplica, "replica1", ""},
		{"context replica node on insert via Query", mockNodeHint("replica1"), "INSERT INTO t (v) VALUES (1) RETURNING id", false, rwshard.ErrWriteToReplica, "replica1", ""},
		{"context replica node on locking read", mockNodeHint("replica2"), "SELECT v FROM t FOR UPDATE", false, rwshard.ErrWriteToReplica, "replica2", ""},
		{"context replica node on last_insert_id", mockNodeHint("replica1"), "SELECT LAST_INSERT_ID()", false, rwshard.ErrWriteToReplica, "replica1", ""},
		{"context replica node on garbage", mockNodeHint("replica1"), "FROBNICATE", true, rwshard.ErrWriteToReplica, "replica1", ""},
		{"comment replica node on delete", nil, "/* rwshard:node=replica1 */ DELETE FROM t", true, rwshard.ErrWriteToReplica, "replica1", ""},
		{"malformed comment", nil, "/* rwshard:primry */ SELECT 1", false, nil, "", "primry"},
		{"malformed comment on exec", nil, "/* rwshard:primry */ UPDATE t SET v = 1", true, nil, "", "primry"},
		{"malformed max_lag", nil, "/* rwshard:max_lag=soon */ SELECT 1", false, nil, "", "max_lag=soon"},
		{"conflicting routes", nil, "/* rwshard:primary, node=replica1 */ SELECT 1", false, nil, "", "node=replica1"},
		{"unsupported shardingsphere key", nil, "/* SHARDINGSPHERE_HINT: DATA_SOURCE_NAME=ds_0 */ SELECT 1", false, nil, "", "DATA_SOURCE_NAME=ds_0"},
		{"malformed with good context hint", hint.Primary, "/* rwshard:primry */ SELECT 1", false, nil, "", "primry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 2)
			err := mockSend(mockCtx(tt.ctx), mc.db, tt.sql, tt.exec)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "rwshard: "), err.Error())
			assert.NotErrorIs(t, err, driver.ErrBadConn)
			if tt.wantHint != "" {
				var he *hint.Error
				require.ErrorAs(t, err, &he)
				assert.Equal(t, tt.wantHint, he.Item)
			} else {
				var re *rwshard.RouteError
				require.ErrorAs(t, err, &re)
				assert.ErrorIs(t, err, tt.wantIs)
				assert.Equal(t, tt.wantNode, re.Node)
				assert.Contains(t, err.Error(), tt.wantNode)
				assert.Equal(t, strings.TrimSpace(tt.sql), re.Statement)
			}
			// Nothing was sent: every mock (none expects anything) is met
			// and none holds a connection.
			mc.verify()
			assert.Equal(t, mc.idle(), mc.busy())
		})
	}
}

// A malformed hint is refused at Prepare, before any execution.
func TestMockHintRefusedAtPrepare(t *testing.T) {
	mc := newMockCluster(t, 1)
	st, err := mc.db.Prepare("/* rwshard:primry */ SELECT v FROM t WHERE id = ?")
	if st != nil {
		st.Close()
	}
	var he *hint.Error
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "primry", he.Item)
	mc.verify()
}

// ---------------------------------------------------------------------
// 4. Transactions

func TestMockTxOnPrimary(t *testing.T) {
	tests := []struct {
		name   string
		opts   *sql.TxOptions
		commit bool
	}{
		{"default commit", nil, true},
		{"default rollback", nil, false},
		{"serializable", &sql.TxOptions{Isolation: sql.LevelSerializable}, true},
		{"repeatable read", &sql.TxOptions{Isolation: sql.LevelRepeatableRead}, true},
		{"read committed rollback", &sql.TxOptions{Isolation: sql.LevelReadCommitted}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 2)
			ctx := context.Background()
			p := mc.primary()
			p.mock.ExpectBegin()
			p.expectRead("SELECT v FROM t WHERE id = ?", int64(1))
			p.expectRead("SHOW TABLES")
			p.expectWrite("UPDATE t SET v = ? WHERE id = ?", int64(2), int64(1))
			p.expectRead("SELECT v FROM t WHERE id = 2") // hint cannot leave the tx
			if tt.commit {
				p.mock.ExpectCommit()
			} else {
				p.mock.ExpectRollback()
			}

			tx, err := mc.db.BeginTx(ctx, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
			mc.ranOn(ctx, tx, "primary", "SELECT v FROM t WHERE id = ?", false, 1)
			mc.ranOn(ctx, tx, "primary", "SHOW TABLES", false)
			mc.ranOn(ctx, tx, "primary", "UPDATE t SET v = ? WHERE id = ?", true, 2, 1)
			mc.ranOn(hint.Node(ctx, "replica2"), tx, "primary", "SELECT v FROM t WHERE id = 2", false)
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "one connection for the whole tx")
			if tt.commit {
				require.NoError(t, tx.Commit())
			} else {
				require.NoError(t, tx.Rollback())
			}
			// The logical connection, idle again, keeps the transaction's
			// primary connection, as one go-sql-driver connection would.
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")

			// After the transaction, reads go to replicas again.
			mc.node("replica1").expectRead("SELECT v FROM t")
			mc.ranOn(ctx, mc.db, "replica1", "SELECT v FROM t", false)
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
			// It is let go when database/sql closes the logical connection.
			mc.dropIdle()
			assert.Equal(t, mc.idle(), mc.busy())
			mc.verify()
		})
	}
}

func TestMockReadOnlyTx(t *testing.T) {
	tests := []struct {
		name string
		mode rwshard.TxReadMode // "" = default
		opts *sql.TxOptions
		want string
	}{
		{"read-only default mode", "", &sql.TxOptions{ReadOnly: true}, "primary"},
		{"read-only primary mode", rwshard.TxReadPrimary, &sql.TxOptions{ReadOnly: true}, "primary"},
		{"read-only replica mode", rwshard.TxReadReplica, &sql.TxOptions{ReadOnly: true}, "replica1"},
		{"read-only replica mode serializable", rwshard.TxReadReplica, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelSerializable}, "replica1"},
		{"read-write in replica mode", rwshard.TxReadReplica, &sql.TxOptions{}, "primary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*rwshard.Config)
			if tt.mode != "" {
				opts = append(opts, func(c *rwshard.Config) { c.ReadOnlyTx = tt.mode })
			}
			mc := newMockCluster(t, 2, opts...)
			ctx := context.Background()
			n := mc.node(tt.want)
			n.mock.ExpectBegin()
			n.expectRead("SELECT v FROM t")
			n.expectRead("SELECT w FROM u")
			n.mock.ExpectCommit()

			tx, err := mc.db.BeginTx(ctx, tt.opts)
			require.NoError(t, err)
			for _, q := range []string{"SELECT v FROM t", "SELECT w FROM u"} {
				mc.ranOn(ctx, tx, tt.want, q, false) // every statement on the tx's node
			}
			require.NoError(t, tx.Commit())
			// A replica's connection is let go with its transaction; a
			// primary's stays with the idle logical connection until
			// database/sql closes it.
			if tt.want == "primary" {
				assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")
			} else {
				assert.Equal(t, mc.idle(), mc.busy(), "a replica connection held after its transaction")
			}
			mc.dropIdle()
			assert.Equal(t, mc.idle(), mc.busy())
			mc.verify()
		})
	}
}

// Only plain reads run in a read-only transaction on a replica: anything
// else is refused and not sent, and the transaction stays usable.
func TestMockReplicaTxRefusesWrites(t *testing.T) {
	refused := []mockStmt{
		{"INSERT INTO t (v) VALUES (1)", true},
		{"UPDATE t SET v = 1", true},
		{"INSERT INTO t (v) VALUES (1) RETURNING id", false},
		{"SELECT v FROM t FOR UPDATE", false},
		{"SELECT LAST_INSERT_ID()", false},
		{"SET @v = 1", true},
		{"FROBNICATE", true},
	}
	mc := newMockCluster(t, 2, func(c *rwshard.Config) { c.ReadOnlyTx = rwshard.TxReadReplica })
	ctx := context.Background()
	r := mc.node("replica1")
	r.mock.ExpectBegin()
	r.expectRead("SELECT v FROM t")
	r.mock.ExpectRollback()

	tx, err := mc.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	for _, q := range refused {
		err := mockSend(ctx, tx, q.sql, q.exec)
		var re *rwshard.RouteError
		if assert.ErrorAs(t, err, &re, q.sql) {
			assert.ErrorIs(t, err, rwshard.ErrWriteToReplica, q.sql)
			assert.Equal(t, "replica1", re.Node)
		}
	}
	mc.ranOn(ctx, tx, "replica1", "SELECT v FROM t", false)
	require.NoError(t, tx.Rollback())
	assert.Equal(t, mc.idle(), mc.busy())
	mc.verify()
}

// A server error on COMMIT reaches the caller, unwrapped; the backend
// connection did not break, so the logical connection, pooled again,
// keeps it until database/sql closes the logical connection.
func TestMockTxCommitError(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	p := mc.primary()
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}
	p.mock.ExpectBegin()
	p.expectWrite("UPDATE t SET v = 1")
	p.mock.ExpectCommit().WillReturnError(deadlock)

	tx, err := mc.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE t SET v = 1")
	require.NoError(t, err)
	err = tx.Commit()
	assert.True(t, err == error(deadlock), "got %v", err)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")
	mc.dropIdle()
	assert.Equal(t, mc.idle(), mc.busy())
	mc.verify()
}

// ---------------------------------------------------------------------
// 5. Session pinning on one *sql.Conn

func TestMockSessionPinning(t *testing.T) {
	tests := []struct {
		name string
		pin  string
		exec bool
	}{
		{"user variable", "SET @v = 1", true},
		{"session variable", "SET SESSION sql_mode = 'ANSI'", true},
		{"set names", "SET NAMES utf8mb4", true},
		{"use", "USE shop", true},
		{"lock tables", "LOCK TABLES t READ", true},
		{"prepare", "PREPARE s FROM 'SELECT v FROM t WHERE id = ?'", true},
		{"assignment in select", "SELECT @v := 1", false},
		{"select into variable", "SELECT v INTO @v FROM t LIMIT 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// rwshard.resetSession=false: the pin outlives the *sql.Conn,
			// as on a go-sql-driver connection (the default ends it).
			mc := newMockCluster(t, 2, func(c *rwshard.Config) { c.ResetSession = false })
			ctx := context.Background()
			p := mc.primary()
			p.expect(tt.pin, tt.exec)
			p.expectRead("SELECT @v")
			p.expectRead("SELECT v FROM t")
			p.expectWrite("UPDATE t SET v = 2")
			p.expectRead("SELECT v FROM t")
			p.expectRead("SELECT v FROM t")
			mc.node("replica1").expectRead("SELECT v FROM t")

			conn := mc.conn(ctx)
			assert.Equal(t, mc.idle(), mc.busy(), "a fresh logical connection holds nothing")
			mc.ranOn(ctx, conn, "primary", tt.pin, tt.exec)
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "pinned after %q", tt.pin)

			for _, step := range []struct {
				sql  string
				exec bool
				ctx  context.Context
			}{
				{"SELECT @v", false, ctx},
				{"SELECT v FROM t", false, ctx},
				{"UPDATE t SET v = 2", true, ctx},
				{"SELECT v FROM t", false, hint.Node(ctx, "replica2")}, // hints cannot leave a pinned session
			} {
				mc.ranOn(step.ctx, conn, "primary", step.sql, step.exec)
				assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "still one pinned connection after %q", step.sql)
			}
			require.NoError(t, conn.Close())

			// conn.Close puts the logical connection back in database/sql's
			// pool with its session, as a go-sql-driver connection would
			// be: its next user (this db.Query) is still pinned.
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its pinned session")
			mc.ranOn(ctx, mc.db, "primary", "SELECT v FROM t", false)

			// The pin ends when database/sql closes the logical connection:
			// the backend connection, which carries session state, is
			// discarded rather than pooled.
			opened := p.db.Stats().OpenConnections
			mc.dropIdle()
			assert.Equal(t, mc.idle(), mc.busy())
			assert.Equal(t, opened-1, p.db.Stats().OpenConnections, "the pinned connection was discarded, not pooled")
			mc.ranOn(ctx, mc.db, "replica1", "SELECT v FROM t", false)
			assert.Equal(t, mc.idle(), mc.busy())
			mc.verify()
		})
	}
}

// A named lock and a temporary table live on the primary connection that
// took or made them: the logical connection keeps that connection, and
// sends there the statements that release the lock or name the table,
// while its other reads go to the replicas. As on a go-sql-driver
// connection, they stay with the logical connection in database/sql's
// pool, and go with it when database/sql closes it.
func TestMockLockAndTempTableKeepNotPin(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	p, r := mc.primary(), mc.node("replica1")
	p.expectRead("SELECT GET_LOCK('x', 1)")
	p.expectWrite("CREATE TEMPORARY TABLE tmp (id INT)")
	p.expectRead("SELECT id FROM tmp")
	p.expectRead("SELECT RELEASE_LOCK('x')")
	r.expectRead("SELECT v FROM t")
	r.expectRead("SELECT v FROM t")

	conn := mc.conn(ctx)
	mc.ranOn(ctx, conn, "primary", "SELECT GET_LOCK('x', 1)", false)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the lock's connection is kept")
	mc.ranOn(ctx, conn, "replica1", "SELECT v FROM t", false)
	mc.ranOn(ctx, conn, "primary", "CREATE TEMPORARY TABLE tmp (id INT)", true)
	mc.ranOn(ctx, conn, "primary", "SELECT id FROM tmp", false)
	mc.ranOn(ctx, conn, "replica1", "SELECT v FROM t", false)
	mc.ranOn(ctx, conn, "primary", "SELECT RELEASE_LOCK('x')", false)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the temporary table keeps it")
	require.NoError(t, conn.Close())

	// Its next use keeps the table, and sends its reads to the replicas.
	r.expectRead("SELECT v FROM t")
	mc.ranOn(ctx, mc.db, "replica1", "SELECT v FROM t", false)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the pooled logical connection keeps the table's connection")
	// Closed by database/sql, it discards that connection, not pooled.
	opened := p.db.Stats().OpenConnections
	mc.dropIdle()
	assert.Equal(t, opened-1, p.db.Stats().OpenConnections, "the connection with the table was discarded")
	mc.verify()
}

// A pinned session holds exactly one backend connection of its own: a
// second pinned session holds a second one, and the primary pool never
// hands the first one to anybody else while it is pinned.
func TestMockPinnedSessionsHoldOwnConnection(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	p := mc.primary()
	// hold + two sessions: with a third session rwshard would have to wait.
	p.db.SetMaxOpenConns(3)
	p.expectWrite("SET @v = 1")
	p.expectWrite("SET @w = 2")
	for range 3 {
		p.expectRead("SELECT @v")
		p.expectRead("SELECT @w")
	}

	c1 := mc.conn(ctx)
	c2 := mc.conn(ctx)
	_, err := c1.ExecContext(ctx, "SET @v = 1")
	require.NoError(t, err)
	assert.Equal(t, 1, p.busy())
	_, err = c2.ExecContext(ctx, "SET @w = 2")
	require.NoError(t, err)
	assert.Equal(t, 2, p.busy())
	assert.Equal(t, 3, p.db.Stats().OpenConnections, "hold + one per session")

	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for range 3 {
		for _, s := range []struct {
			c *sql.Conn
			q string
		}{{c1, "SELECT @v"}, {c2, "SELECT @w"}} {
			mc.ranOn(tctx, s.c, "primary", s.q, false) // a pinned session needs no second connection
			assert.Equal(t, 2, p.busy())
		}
	}
	assert.Equal(t, 3, p.db.Stats().OpenConnections, "no connection opened for statements in a pinned session")
	require.NoError(t, c1.Close())
	require.NoError(t, c2.Close())
	mc.verify()
}

// Text transactions pin until they end; then reads go to replicas again.
func TestMockTextTransaction(t *testing.T) {
	tests := []struct {
		name, begin, end string
	}{
		{"begin commit", "BEGIN", "COMMIT"},
		{"begin work rollback", "BEGIN WORK", "ROLLBACK"},
		{"start transaction commit", "START TRANSACTION", "COMMIT"},
		{"start transaction read only", "START TRANSACTION READ ONLY", "COMMIT"},
		{"lower case", "begin", "commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 2)
			ctx := context.Background()
			p := mc.primary()
			p.expectWrite(tt.begin)
			p.expectRead("SELECT v FROM t")
			p.expectWrite("INSERT INTO t (v) VALUES (1)")
			p.expectRead("SELECT v FROM t WHERE id = 1")
			p.expectWrite(tt.end)
			mc.node("replica1").expectRead("SELECT v FROM t")

			conn := mc.conn(ctx)
			for _, s := range []mockStmt{
				{tt.begin, true},
				{"SELECT v FROM t", false},
				{"INSERT INTO t (v) VALUES (1)", true},
				{"SELECT v FROM t WHERE id = 1", false},
				{tt.end, true},
			} {
				mc.ranOn(ctx, conn, "primary", s.sql, s.exec)
			}
			// The transaction ended and nothing else pinned the session:
			// plain reads go to replicas again.
			mc.ranOn(ctx, conn, "replica1", "SELECT v FROM t", false)
			require.NoError(t, conn.Close())
			// The idle logical connection keeps its primary connection
			// until database/sql closes it; carrying no session state, that
			// connection then goes back to the primary's pool.
			assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")
			opened := p.db.Stats().OpenConnections
			mc.dropIdle()
			assert.Equal(t, mc.idle(), mc.busy())
			assert.Equal(t, opened, p.db.Stats().OpenConnections, "a connection without session state was discarded")
			mc.verify()
		})
	}
}

// A BeginTx transaction on a connection with an open text transaction is
// refused before anything is sent.
func TestMockBeginTxInsideTextTransaction(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	mc.primary().expectWrite("BEGIN")
	conn := mc.conn(ctx, "BEGIN")
	_, err := conn.BeginTx(ctx, nil)
	var re *rwshard.RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "in-transaction", re.Reason)
	mc.verify()
}

// SET autocommit=0 keeps everything on the primary. SET autocommit=1 ends
// the transaction, but SET is itself session state (the router marks it
// Pin), so the session stays on its primary connection until database/sql
// closes the logical connection: *sql.Conn.Close only pools it again, and
// its next user is still pinned.
func TestMockAutocommitOff(t *testing.T) {
	mc := newMockCluster(t, 2, keepSessions)
	ctx := context.Background()
	p := mc.primary()
	steps := []mockStmt{
		{"SET autocommit=0", true},
		{"SELECT v FROM t", false},
		{"UPDATE t SET v = 1", true},
		{"COMMIT", true}, // autocommit is still off: a new transaction starts
		{"SELECT v FROM t", false},
		{"SET autocommit=1", true},
		{"SELECT v FROM t", false},
	}
	for _, s := range steps {
		p.expect(s.sql, s.exec)
	}
	p.expectRead("SELECT v FROM t")
	mc.node("replica1").expectRead("SELECT v FROM t")

	conn := mc.conn(ctx)
	for _, s := range steps {
		mc.ranOn(ctx, conn, "primary", s.sql, s.exec)
		assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), s.sql)
	}
	require.NoError(t, conn.Close())
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its session")
	mc.ranOn(ctx, mc.db, "primary", "SELECT v FROM t", false) // the next user is still pinned
	mc.dropIdle()
	assert.Equal(t, mc.idle(), mc.busy())
	mc.ranOn(ctx, mc.db, "replica1", "SELECT v FROM t", false)
	mc.verify()
}

// keepSessions is rwshard.resetSession=false.
var keepSessions = func(c *rwshard.Config) { c.ResetSession = false }

// With rwshard.resetSession=false, an idle logical connection keeps its
// pinned session, as a go-sql-driver connection in database/sql's pool
// keeps its session state: IsValid and
// ResetSession change nothing, so the next user of that logical connection
// is still pinned to the same backend connection. The session ends when
// database/sql closes the logical connection (here: over MaxIdleConns, or
// db.Close), and the backend connection, which carries session state, is
// then discarded rather than pooled.
func TestMockPinnedSessionKeptWhenIdle(t *testing.T) {
	// kept checks that the idle logical connection holds the pinned
	// backend connection and that its next user runs a plain read (a
	// replica's, unpinned) there, then that closing the logical connection
	// (end) releases and discards it.
	kept := func(t *testing.T, mc *mockCluster, end func()) {
		t.Helper()
		p := mc.primary()
		assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its pinned session")
		p.expectRead("SELECT v FROM t")
		mc.ranOn(context.Background(), mc.db, "primary", "SELECT v FROM t", false)
		assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
		opened := p.db.Stats().OpenConnections
		end()
		assert.Equal(t, mc.idle(), mc.busy(), "a closed logical connection still holds its backend connection")
		assert.Equal(t, opened-1, p.db.Stats().OpenConnections, "the backend connection with session state was pooled")
		mc.verify()
	}
	t.Run("sql.Conn closed", func(t *testing.T) {
		mc := newMockCluster(t, 1, keepSessions)
		ctx := context.Background()
		mc.primary().expectWrite("SET @v = 1")
		conn := mc.conn(ctx, "SET @v = 1")
		assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
		require.NoError(t, conn.Close())
		kept(t, mc, mc.dropIdle)
	})
	t.Run("db.Exec of a pinning statement", func(t *testing.T) {
		mc := newMockCluster(t, 1, keepSessions)
		ctx := context.Background()
		mc.primary().expectWrite("SET @v = 1")
		_, err := mc.db.ExecContext(ctx, "SET @v = 1")
		require.NoError(t, err)
		kept(t, mc, mc.dropIdle)
	})
	t.Run("text transaction left open", func(t *testing.T) {
		mc := newMockCluster(t, 1, keepSessions)
		ctx := context.Background()
		mc.primary().expectWrite("BEGIN")
		conn := mc.conn(ctx, "BEGIN")
		require.NoError(t, conn.Close())
		kept(t, mc, mc.dropIdle) // still in the transaction
	})
	t.Run("db.Close", func(t *testing.T) {
		mc := newMockCluster(t, 1, keepSessions)
		ctx := context.Background()
		mc.primary().expectWrite("SET @v = 1")
		_, err := mc.db.ExecContext(ctx, "SET @v = 1")
		require.NoError(t, err)
		kept(t, mc, func() { require.NoError(t, mc.db.Close()) })
	})
}

// ---------------------------------------------------------------------
// 6. Idle logical connections hold no replica connection, and at most the
// one primary connection they last used

// A replica's connection is let go with its rows; a primary's stays with
// the logical connection, idle in database/sql's pool or not, until
// database/sql closes that logical connection: one go-sql-driver
// connection would keep its server connection too.
func TestMockIdleHoldsOnlyPrimary(t *testing.T) {
	mc := newMockCluster(t, 2)
	ctx := context.Background()
	r1, r2, p := mc.node("replica1"), mc.node("replica2"), mc.primary()
	r1.expectRead("SELECT v FROM t")
	r2.expectRead("SELECT v FROM t")
	p.expectWrite("INSERT INTO t (v) VALUES (1)")
	r1.mock.ExpectExec("SELECT v FROM t").WillReturnResult(sqlmock.NewResult(0, 0))

	// Rows open: the chosen replica's connection is checked out, and only
	// that one.
	rows, err := mc.db.QueryContext(ctx, "SELECT v FROM t")
	require.NoError(t, err)
	assert.Equal(t, mc.busyOnly("replica1", 1), mc.busy())
	require.True(t, rows.Next())
	assert.Equal(t, mc.busyOnly("replica1", 1), mc.busy())
	require.NoError(t, rows.Close())
	assert.Equal(t, mc.idle(), mc.busy())

	// A row scanned to the end releases it too.
	mc.ranOn(ctx, mc.db, "replica2", "SELECT v FROM t", false)
	assert.Equal(t, mc.idle(), mc.busy())

	// A write: the (only) idle logical connection keeps its primary
	// connection.
	_, err = mc.db.ExecContext(ctx, "INSERT INTO t (v) VALUES (1)")
	require.NoError(t, err)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the write's primary connection is kept")

	// A read through Exec still lets its replica connection go.
	_, err = mc.db.ExecContext(ctx, "SELECT v FROM t")
	require.NoError(t, err)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "a replica connection is held")

	// A *sql.Conn (here the same logical connection, the pool's only one)
	// holds no replica connection between reads, and its write runs on the
	// primary connection already held, not on a second one.
	r2.expectRead("SELECT v FROM t")
	p.expectWrite("UPDATE t SET v = 1")
	conn := mc.conn(ctx)
	_, err = mockRead(ctx, conn, "SELECT v FROM t")
	require.NoError(t, err)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
	_, err = conn.ExecContext(ctx, "UPDATE t SET v = 1")
	require.NoError(t, err)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
	require.NoError(t, conn.Close())
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")
	// database/sql closing the logical connection lets it go.
	mc.dropIdle()
	assert.Equal(t, mc.idle(), mc.busy())
	mc.verify()
}

// A logical connection (here a *sql.Conn) keeps the primary connection it
// last used, so connection-bound reads such as LAST_INSERT_ID() see its
// own writes, as on one go-sql-driver connection; plain reads still go to
// replicas. It keeps it while idle in database/sql's pool too: the next
// user's transaction (BeginTx) runs on it rather than on one released and
// taken again. It is let go when database/sql closes the logical
// connection.
func TestMockHeldPrimaryConnection(t *testing.T) {
	mc := newMockCluster(t, 2)
	ctx := context.Background()
	p := mc.primary()
	p.expectWrite("INSERT INTO t (v) VALUES (1)")
	p.expectRead("SELECT LAST_INSERT_ID()")
	p.expectWrite("INSERT INTO t (v) VALUES (2)")
	p.expectRead("SELECT ROW_COUNT()")
	mc.node("replica1").expectRead("SELECT v FROM t")

	conn := mc.conn(ctx)
	opened := p.db.Stats().OpenConnections
	for _, s := range []struct {
		sql, want string
		exec      bool
	}{
		{"INSERT INTO t (v) VALUES (1)", "primary", true},
		{"SELECT LAST_INSERT_ID()", "primary", false},
		{"SELECT v FROM t", "replica1", false},
		{"INSERT INTO t (v) VALUES (2)", "primary", true},
		{"SELECT ROW_COUNT()", "primary", false},
	} {
		mc.ranOn(ctx, conn, s.want, s.sql, s.exec)
		assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "after %q: the same primary connection is held", s.sql)
	}
	assert.LessOrEqual(t, p.db.Stats().OpenConnections, opened+1, "one primary connection for the whole conversation")
	require.NoError(t, conn.Close())
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")

	// From now on a connection given back to the primary's pool is closed
	// there (MaxIdleClosed counts it): BeginTx gives none back.
	p.db.SetMaxIdleConns(0)
	closed := p.db.Stats().MaxIdleClosed
	p.mock.ExpectBegin()
	p.expectRead("SELECT LAST_INSERT_ID()")
	p.mock.ExpectCommit()
	tx, err := mc.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	mc.ranOn(ctx, tx, "primary", "SELECT LAST_INSERT_ID()", false)
	require.NoError(t, tx.Commit())
	assert.Equal(t, closed, p.db.Stats().MaxIdleClosed, "BeginTx let the held primary connection go and took another")
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())

	mc.dropIdle()
	assert.Equal(t, mc.idle(), mc.busy())
	assert.Equal(t, closed+1, p.db.Stats().MaxIdleClosed, "closing the logical connection gave its primary connection back")
	mc.verify()
}

// A held primary connection that carries no session state and breaks
// before the statement was sent is let go: the statement runs on a fresh
// one, which the logical connection then holds, and the caller sees no
// error.
func TestMockBadConnOnHeldPrimary(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	p := mc.primary()
	p.expectWrite("INSERT INTO t (v) VALUES (1)")
	p.mock.ExpectExec("UPDATE t SET v = 2").WillReturnError(driver.ErrBadConn)
	p.expectWrite("UPDATE t SET v = 2")

	conn := mc.conn(ctx, "INSERT INTO t (v) VALUES (1)")
	mc.ranOn(ctx, conn, "primary", "UPDATE t SET v = 2", true)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "one primary connection held, the fresh one")
	require.NoError(t, conn.Close())
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")
	mc.dropIdle()
	assert.Equal(t, mc.idle(), mc.busy())
	mc.verify()
}

// ---------------------------------------------------------------------
// 7. Errors

func TestMockServerErrorUnwrapped(t *testing.T) {
	tests := []struct {
		name string
		node string
		sql  string
		exec bool
		ctx  func(context.Context) context.Context
	}{
		{"write on primary", "primary", "INSERT INTO t (id) VALUES (1)", true, nil},
		{"read on replica", "replica1", "SELECT v FROM t", false, nil},
		{"read on primary by hint", "primary", "SELECT v FROM t", false, hint.Primary},
		{"read on replica by hint", "replica2", "SELECT v FROM t", false, mockNodeHint("replica2")},
		{"locking read", "primary", "SELECT v FROM t FOR UPDATE", false, nil},
		{"pinning statement", "primary", "SET @v = 1", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 2)
			dup := &mysql.MySQLError{Number: 1062, Message: "dup"}
			mc.node(tt.node).expectError(tt.sql, tt.exec, dup)
			err := mockSend(mockCtx(tt.ctx), mc.db, tt.sql, tt.exec)
			assert.True(t, err == error(dup), "want the server's error itself, got %T %v", err, err)
			var me *mysql.MySQLError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, uint16(1062), me.Number)
			mc.verify()
		})
	}
}

// A server error inside a transaction and inside a pinned session passes
// through and leaves the transaction / session usable.
func TestMockServerErrorInSession(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	p := mc.primary()
	dup := &mysql.MySQLError{Number: 1062, Message: "dup"}
	p.mock.ExpectBegin()
	p.mock.ExpectExec("INSERT INTO t (id) VALUES (1)").WillReturnError(dup)
	p.expectRead("SELECT v FROM t")
	p.mock.ExpectCommit()
	p.expectWrite("SET @v = 1")
	p.mock.ExpectQuery("SELECT @v").WillReturnError(dup)
	p.expectRead("SELECT @v")

	tx, err := mc.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO t (id) VALUES (1)")
	assert.True(t, err == error(dup), "got %v", err)
	mc.ranOn(ctx, tx, "primary", "SELECT v FROM t", false)
	require.NoError(t, tx.Commit())

	conn := mc.conn(ctx, "SET @v = 1")
	_, err = mockRead(ctx, conn, "SELECT @v")
	assert.True(t, err == error(dup), "got %v", err)
	mc.ranOn(ctx, conn, "primary", "SELECT @v", false)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the session survived the server error")
	mc.verify()
}

// driver.ErrBadConn proves the statement was not sent: rwshard retries on
// a fresh backend connection of the same node, and the caller never sees
// driver.ErrBadConn.
func TestMockBadConnRetried(t *testing.T) {
	tests := []struct {
		name string
		node string
		sql  string
		exec bool
		ctx  func(context.Context) context.Context
	}{
		{"read on replica", "replica1", "SELECT v FROM t", false, nil},
		{"read on hinted replica", "replica2", "SELECT v FROM t", false, mockNodeHint("replica2")},
		{"write on primary", "primary", "UPDATE t SET v = 1", true, nil},
		{"select through exec", "replica1", "SELECT v FROM t", true, nil},
	}
	for _, tt := range tests {
		for bad := 1; bad <= 2; bad++ {
			t.Run(fmt.Sprintf("%s/%d bad", tt.name, bad), func(t *testing.T) {
				mc := newMockCluster(t, 2)
				n := mc.node(tt.node)
				for range bad {
					n.expectError(tt.sql, tt.exec, driver.ErrBadConn)
				}
				n.expect(tt.sql, tt.exec)
				mc.ranOn(mockCtx(tt.ctx), mc.db, tt.node, tt.sql, tt.exec)
				// A replica's connection is let go; the primary's that ran
				// the write stays with the idle logical connection, and
				// only that one (the broken ones were let go).
				if tt.node == "primary" {
					assert.Equal(t, mc.busyOnly("primary", 1), mc.busy())
				} else {
					assert.Equal(t, mc.idle(), mc.busy())
				}
				mc.dropIdle()
				assert.Equal(t, mc.idle(), mc.busy())
				mc.verify()
			})
		}
	}
}

// After the bounded retries, the caller gets a *RouteError wrapping
// ErrBrokenConnection, never driver.ErrBadConn (database/sql would retry
// it once more on another logical connection).
func TestMockBadConnExhausted(t *testing.T) {
	const attempts = 3 // the first try and maxBadConnRetries (2) retries
	// A read whose connections all break is retried once on another node
	// (here the primary, the only other one), where the same happens; a
	// write is not retried elsewhere.
	tests := []struct {
		name  string
		nodes []string // where the attempts go, in order
		sql   string
		exec  bool
	}{
		{"read", []string{"replica1", "primary"}, "SELECT v FROM t", false},
		{"write", []string{"primary"}, "UPDATE t SET v = 1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 1)
			ctx := context.Background()
			// Exactly 'attempts' expectations per node: a further attempt
			// would get sqlmock's refusal instead of ErrBrokenConnection.
			for _, name := range tt.nodes {
				n := mc.node(name)
				for range attempts {
					n.expectError(tt.sql, tt.exec, driver.ErrBadConn)
				}
			}
			err := mockSend(ctx, mc.db, tt.sql, tt.exec)
			require.Error(t, err)
			assert.NotErrorIs(t, err, driver.ErrBadConn)
			var re *rwshard.RouteError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, rwshard.ErrBrokenConnection)
			assert.Equal(t, tt.nodes[len(tt.nodes)-1], re.Node)
			assert.Equal(t, tt.sql, re.Statement)
			assert.Equal(t, mc.idle(), mc.busy())
			mc.verify()
		})
	}
}

// A broken pinned connection loses the session: the caller gets
// ErrSessionLost (not driver.ErrBadConn) and the statement is not retried
// elsewhere, since its session state cannot be rebuilt.
func TestMockBadConnInSession(t *testing.T) {
	t.Run("sql.Conn pinned by SET", func(t *testing.T) {
		mc := newMockCluster(t, 1)
		ctx := context.Background()
		p := mc.primary()
		p.expectWrite("SET @v = 1")
		p.mock.ExpectQuery("SELECT @v").WillReturnError(driver.ErrBadConn) // exactly once

		conn := mc.conn(ctx, "SET @v = 1")
		_, err := mockRead(ctx, conn, "SELECT @v")
		require.Error(t, err)
		assert.NotErrorIs(t, err, driver.ErrBadConn)
		assert.ErrorIs(t, err, rwshard.ErrSessionLost)
		var re *rwshard.RouteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "primary", re.Node)
		assert.Equal(t, mc.idle(), mc.busy())
		mc.verify()
	})
	t.Run("BeginTx", func(t *testing.T) {
		mc := newMockCluster(t, 1)
		ctx := context.Background()
		p := mc.primary()
		p.mock.ExpectBegin()
		p.mock.ExpectExec("UPDATE t SET v = 1").WillReturnError(driver.ErrBadConn)

		tx, err := mc.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "UPDATE t SET v = 1")
		assert.NotErrorIs(t, err, driver.ErrBadConn)
		assert.ErrorIs(t, err, rwshard.ErrSessionLost)
		err = tx.Commit()
		require.Error(t, err, "a lost transaction cannot commit")
		assert.NotErrorIs(t, err, driver.ErrBadConn)
		assert.Equal(t, mc.idle(), mc.busy())
		mc.verify()
	})
}

// Regression: after a text transaction's connection broke (ErrSessionLost),
// the same *sql.Conn must not go on as if nothing happened: the next
// statement would pin a fresh primary connection and run outside the
// transaction (an INSERT would autocommit, and the caller's ROLLBACK could
// not undo it). As on a broken go-sql-driver connection, the next
// statement gets driver.ErrBadConn and is not sent; database/sql then
// discards the logical connection, so the *sql.Conn is done (sql.ErrConnDone
// for everything after) and the *sql.DB goes on with a fresh one.
func TestMockSessionLostPoisonsConnection(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	p := mc.primary()
	p.expectWrite("BEGIN")
	p.expectWrite("INSERT INTO t (v) VALUES (1)")
	p.mock.ExpectExec("UPDATE t SET v = 2").WillReturnError(driver.ErrBadConn)

	conn := mc.conn(ctx, "BEGIN", "INSERT INTO t (v) VALUES (1)")
	require.Equal(t, 1, mc.db.Stats().OpenConnections)
	_, err := conn.ExecContext(ctx, "UPDATE t SET v = 2")
	require.ErrorIs(t, err, rwshard.ErrSessionLost)
	assert.NotErrorIs(t, err, driver.ErrBadConn, "the statement that met the break says why")

	// Nothing more is sent on this logical connection.
	err = mockSend(ctx, conn, "INSERT INTO t (v) VALUES (3)", true)
	assert.ErrorIs(t, err, driver.ErrBadConn, "the first statement after the session was lost")
	assert.NotErrorIs(t, err, rwshard.ErrSessionLost)
	for _, s := range []mockStmt{
		{"SELECT v FROM t", false},
		{"ROLLBACK", true},
	} {
		err := mockSend(ctx, conn, s.sql, s.exec)
		assert.ErrorIs(t, err, sql.ErrConnDone, "%q: database/sql discarded the connection", s.sql)
	}
	assert.Equal(t, 0, mc.db.Stats().OpenConnections, "the lost logical connection was discarded")
	assert.Equal(t, mc.idle(), mc.busy())
	mc.verify()

	// The *sql.DB goes on with a fresh logical connection.
	mc.node("replica1").expectRead("SELECT v FROM t")
	mc.ranOn(ctx, mc.db, "replica1", "SELECT v FROM t", false)
	mc.verify()
}

// A driver.ErrBadConn from closing the rows (the rows were read) is not
// passed up, and the backend connection is discarded, not pooled.
func TestMockBadConnOnRowsClose(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	r := mc.node("replica1")
	r.mock.ExpectQuery("SELECT v FROM t").WillReturnRows(
		sqlmock.NewRows([]string{"node"}).AddRow("replica1").CloseError(driver.ErrBadConn))
	opened := r.db.Stats().OpenConnections

	rows, err := mc.db.QueryContext(ctx, "SELECT v FROM t")
	require.NoError(t, err)
	require.True(t, rows.Next())
	assert.NoError(t, rows.Close())
	assert.Equal(t, mc.idle(), mc.busy())
	assert.Equal(t, opened, r.db.Stats().OpenConnections, "the broken connection was discarded")
	mc.verify()
}

// ---------------------------------------------------------------------
// 8. Arguments pass through unchanged

// mockValuer is a custom driver.Valuer: the backend driver, not rwshard,
// decides when to call it.
type mockValuer struct{ s string }

func (v mockValuer) Value() (driver.Value, error) { return "valued:" + v.s, nil }

// mockCapture is a sqlmock.Argument that records the value the mock received.
type mockCapture struct{ got *[]driver.Value }

func (c mockCapture) Match(v driver.Value) bool {
	*c.got = append(*c.got, v)
	return true
}

func mockArgs() []any {
	return []any{
		nil,
		[]byte("raw\x00bytes"),
		time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.FixedZone("X", 5*3600+1800)),
		int64(-42),
		uint64(1<<63 + 5),
		json.RawMessage(`{"a":[1,2]}`),
		mockValuer{"v"},
		"text ✓",
		3.25,
		true,
		int32(7),
	}
}

// mockRunCaptured runs one statement with args through qr against mock
// expectations that mockCapture every argument, and returns what the mock
// received. A prepared statement is first prepared (and closed) on prep
// when it is not nil: rwshard's Prepare lets the primary check it (and,
// the handles not being rwshard's own, closes it again), and each
// execution prepares on its node.
func mockRunCaptured(t *testing.T, mock, prep sqlmock.Sqlmock, qr mockQuerier, q string, exec, prepared bool, args []any) []driver.Value {
	t.Helper()
	ctx := context.Background()
	var got []driver.Value
	matchers := make([]driver.Value, len(args))
	for i := range matchers {
		matchers[i] = mockCapture{&got}
	}
	if prepared && prep != nil {
		prep.ExpectPrepare(q).WillBeClosed()
	}
	switch {
	case prepared && exec:
		mock.ExpectPrepare(q).WillBeClosed().ExpectExec().WithArgs(matchers...).WillReturnResult(sqlmock.NewResult(1, 1))
	case prepared:
		mock.ExpectPrepare(q).WillBeClosed().ExpectQuery().WithArgs(matchers...).WillReturnRows(sqlmock.NewRows([]string{"x"}).AddRow(1))
	case exec:
		mock.ExpectExec(q).WithArgs(matchers...).WillReturnResult(sqlmock.NewResult(1, 1))
	default:
		mock.ExpectQuery(q).WithArgs(matchers...).WillReturnRows(sqlmock.NewRows([]string{"x"}).AddRow(1))
	}
	type mockPreparer interface {
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	}
	if exec {
		var err error
		if prepared {
			st, perr := qr.(mockPreparer).PrepareContext(ctx, q)
			require.NoError(t, perr)
			defer st.Close()
			_, err = st.ExecContext(ctx, args...)
		} else {
			_, err = qr.ExecContext(ctx, q, args...)
		}
		require.NoError(t, err)
	} else {
		var (
			rows *sql.Rows
			err  error
		)
		if prepared {
			st, perr := qr.(mockPreparer).PrepareContext(ctx, q)
			require.NoError(t, perr)
			defer st.Close()
			rows, err = st.QueryContext(ctx, args...)
		} else {
			rows, err = qr.QueryContext(ctx, q, args...)
		}
		require.NoError(t, err)
		require.NoError(t, rows.Close())
	}
	return got
}

// The backend receives through rwshard exactly what it receives without
// rwshard, for each way a statement can run. With a pass-through converter
// on the mock that is the caller's values themselves (types included):
// rwshard converts nothing itself, so go-sql-driver keeps uint64 >= 1<<63,
// json.RawMessage and its own driver.Valuer handling. With the default
// converter, the backend's conversion runs once, as without rwshard.
func TestMockArgsPassThrough(t *testing.T) {
	paths := []struct {
		name           string
		sql            string
		node           string
		exec, prepared bool
		tx             bool
	}{
		{"query on replica", "SELECT x FROM t WHERE a IN (?,?,?,?,?,?,?,?,?,?,?)", "replica1", false, false, false},
		{"exec on primary", "INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)", "primary", true, false, false},
		{"prepared query on replica", "SELECT x FROM t WHERE a IN (?,?,?,?,?,?,?,?,?,?,?)", "replica1", false, true, false},
		{"prepared exec on primary", "INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)", "primary", true, true, false},
		{"exec in tx", "INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)", "primary", true, false, true},
		{"query in tx", "SELECT x FROM t WHERE a IN (?,?,?,?,?,?,?,?,?,?,?)", "primary", false, false, true},
	}
	convs := []struct {
		name string
		conv driver.ValueConverter
	}{
		{"pass-through", mockPassThrough{}},
		{"default converter", driver.DefaultParameterConverter},
	}
	for _, cv := range convs {
		for _, pt := range paths {
			t.Run(cv.name+"/"+pt.name, func(t *testing.T) {
				args := mockArgs()
				if cv.conv == driver.DefaultParameterConverter {
					args = slices.Delete(args, 4, 5) // uint64 >= 1<<63: the converter refuses it, see below
				}
				q := mockPlaceholders(pt.sql, len(args))

				// Without rwshard.
				direct := newMockNode(t, 9, cv.conv)
				want := mockRunMaybeTx(t, direct.db, direct.mock, nil, pt.tx, q, pt.exec, pt.prepared, args)

				// Through rwshard.
				mc := newMockClusterConv(t, 2, cv.conv)
				n := mc.node(pt.node)
				got := mockRunMaybeTx(t, mc.db, n.mock, mc.primary().mock, pt.tx, q, pt.exec, pt.prepared, args)
				mc.verify()

				require.Len(t, got, len(args))
				mockAssertSameValues(t, want, got)
				if cv.conv == (mockPassThrough{}) {
					// The caller's own values, types included.
					want := make([]driver.Value, len(args))
					for i, a := range args {
						want[i] = a
					}
					mockAssertSameValues(t, want, got)
				}
			})
		}
	}
}

// The mock's own converter refuses uint64 >= 1<<63 (go-sql-driver's
// accepts it): rwshard hands that refusal back, unwrapped by its own
// error types, and sends nothing.
func TestMockArgsConverterRefusal(t *testing.T) {
	mc := newMockCluster(t, 1)
	_, err := mc.db.ExecContext(context.Background(), "INSERT INTO t VALUES (?)", uint64(1<<63+5))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "uint64")
	var re *rwshard.RouteError
	assert.False(t, errors.As(err, &re), "a conversion error is the backend's: %v", err)
	mc.verify()
	assert.Equal(t, mc.idle(), mc.busy())
}

// Named arguments keep their names.
func TestMockNamedArgs(t *testing.T) {
	mc := newMockCluster(t, 1)
	mc.primary().mock.ExpectExec("UPDATE t SET v = :v WHERE id = :id").
		WithArgs(sql.Named("v", int64(2)), sql.Named("id", int64(1))).
		WillReturnResult(sqlmock.NewResult(0, 1))
	_, err := mc.db.Exec("UPDATE t SET v = :v WHERE id = :id", sql.Named("v", 2), sql.Named("id", 1))
	require.NoError(t, err)
	mc.verify()
}

// mockRunMaybeTx is mockRunCaptured on db itself or in a transaction of db
// (rolled back), checking the mocks' expectations after.
func mockRunMaybeTx(t *testing.T, db *sql.DB, mock, prep sqlmock.Sqlmock, inTx bool, q string, exec, prepared bool, args []any) []driver.Value {
	t.Helper()
	if !inTx {
		got := mockRunCaptured(t, mock, prep, db, q, exec, prepared, args)
		require.NoError(t, mock.ExpectationsWereMet())
		if prep != nil {
			require.NoError(t, prep.ExpectationsWereMet())
		}
		return got
	}
	mock.ExpectBegin()
	tx, err := db.Begin()
	require.NoError(t, err)
	got := mockRunCaptured(t, mock, prep, tx, q, exec, prepared, args)
	mock.ExpectRollback()
	require.NoError(t, tx.Rollback())
	require.NoError(t, mock.ExpectationsWereMet())
	return got
}

// placeholders rewrites the ?-list of q to n placeholders.
func mockPlaceholders(q string, n int) string {
	i := strings.Index(q, "(?")
	return q[:i] + "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
}

func mockAssertSameValues(t *testing.T, want, got []driver.Value) {
	t.Helper()
	for i := range want {
		if i >= len(got) {
			t.Errorf("arg %d missing", i)
			continue
		}
		assert.Equal(t, reflect.TypeOf(want[i]), reflect.TypeOf(got[i]), "arg %d type", i)
		if wt, ok := want[i].(time.Time); ok {
			gt, _ := got[i].(time.Time)
			assert.True(t, wt.Equal(gt), "arg %d: %v != %v", i, wt, gt)
			assert.Equal(t, wt.Location().String(), gt.Location().String(), "arg %d location", i)
			continue
		}
		assert.Equal(t, want[i], got[i], "arg %d", i)
	}
}

// ---------------------------------------------------------------------
// 9. Results

func TestMockResultPreserved(t *testing.T) {
	const insert = "INSERT INTO t (v) VALUES (?)"
	tests := []struct {
		name   string
		before func(p *mockNode) // expectations before the INSERT
		after  func(p *mockNode) // and after it
		run    func(ctx context.Context, db *sql.DB) (sql.Result, error)
	}{
		{"db exec", nil, nil, func(ctx context.Context, db *sql.DB) (sql.Result, error) {
			return db.ExecContext(ctx, insert, 7)
		}},
		{"tx exec",
			func(p *mockNode) { p.mock.ExpectBegin() },
			func(p *mockNode) { p.mock.ExpectCommit() },
			func(ctx context.Context, db *sql.DB) (sql.Result, error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return nil, err
				}
				res, err := tx.ExecContext(ctx, insert, 7)
				if err != nil {
					tx.Rollback()
					return nil, err
				}
				return res, tx.Commit()
			}},
		{"pinned conn exec",
			func(p *mockNode) { p.expectWrite("SET @v = 1") },
			nil,
			func(ctx context.Context, db *sql.DB) (sql.Result, error) {
				conn, err := db.Conn(ctx)
				if err != nil {
					return nil, err
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, "SET @v = 1"); err != nil {
					return nil, err
				}
				return conn.ExecContext(ctx, insert, 7)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 1)
			p := mc.primary()
			if tt.before != nil {
				tt.before(p)
			}
			p.mock.ExpectExec(insert).WithArgs(int64(7)).WillReturnResult(sqlmock.NewResult(42, 3))
			if tt.after != nil {
				tt.after(p)
			}
			res, err := tt.run(context.Background(), mc.db)
			require.NoError(t, err)
			id, err := res.LastInsertId()
			require.NoError(t, err)
			assert.Equal(t, int64(42), id)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			assert.Equal(t, int64(3), n)
			mc.verify()
		})
	}
}

// A result's own error (sqlmock.NewErrorResult) reaches the caller.
func TestMockResultError(t *testing.T) {
	mc := newMockCluster(t, 1)
	boom := errors.New("no last insert id")
	mc.primary().mock.ExpectExec("DELETE FROM t").WillReturnResult(sqlmock.NewErrorResult(boom))
	res, err := mc.db.Exec("DELETE FROM t")
	require.NoError(t, err)
	_, err = res.LastInsertId()
	assert.Same(t, boom, err)
	mc.verify()
}

// ---------------------------------------------------------------------
// 10. Prepared statements

// Prepare lets the primary check the statement, as go-sql-driver's does,
// on the primary connection the logical connection then holds; a read's
// executions are still routed to replicas.
func TestMockPreparedRead(t *testing.T) {
	mc := newMockCluster(t, 2)
	ctx := context.Background()
	const q = "SELECT v FROM t WHERE id = ?"
	// The handles are not rwshard's own (no statement cache): the
	// statement checked at Prepare is closed again at once.
	mc.primary().mock.ExpectPrepare(q).WillBeClosed()
	st := mc.prepare(ctx, q)
	mc.verify() // Prepare prepared on the primary, and only there
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the logical connection keeps the primary connection Prepare took")

	// Each execution prepares on its backend connection and closes the
	// statement with the rows.
	want := []string{"replica1", "replica2", "replica1"}
	for i, name := range want {
		mc.node(name).mock.ExpectPrepare(q).WillBeClosed().
			ExpectQuery().WithArgs(int64(i)).
			WillReturnRows(sqlmock.NewRows([]string{"node"}).AddRow(name)).RowsWillBeClosed()
	}
	for i, name := range want {
		var got string
		require.NoError(t, st.QueryRowContext(ctx, i).Scan(&got))
		assert.Equal(t, name, got)
		assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "a replica connection is held")
	}

	// A hint still routes a prepared statement.
	mc.primary().mock.ExpectPrepare(q).WillBeClosed().
		ExpectQuery().WithArgs(int64(9)).
		WillReturnRows(sqlmock.NewRows([]string{"node"}).AddRow("primary"))
	var got string
	require.NoError(t, st.QueryRowContext(hint.Primary(ctx), 9).Scan(&got))
	assert.Equal(t, "primary", got)
	mc.verify()
}

func TestMockPreparedWrite(t *testing.T) {
	mc := newMockCluster(t, 2)
	ctx := context.Background()
	const q = "INSERT INTO t (v) VALUES (?)"
	mc.primary().mock.ExpectPrepare(q).WillBeClosed() // checked at Prepare
	st := mc.prepare(ctx, q)
	for i := range 2 {
		mc.primary().mock.ExpectPrepare(q).WillBeClosed().
			ExpectExec().WithArgs(int64(i)).WillReturnResult(sqlmock.NewResult(42, 3))
	}
	for i := range 2 {
		res, err := st.ExecContext(ctx, i)
		require.NoError(t, err)
		id, _ := res.LastInsertId()
		n, _ := res.RowsAffected()
		assert.Equal(t, [2]int64{42, 3}, [2]int64{id, n})
	}
	// A replica hint on a prepared write is refused and not sent.
	_, err := st.ExecContext(hint.Node(ctx, "replica1"), 5)
	assert.ErrorIs(t, err, rwshard.ErrWriteToReplica)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "only the held primary connection")
	mc.verify()
}

// Prepare returns the server's own error when the primary refuses the
// statement, as go-sql-driver's Prepare does; nothing else is sent.
func TestMockPrepareServerError(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	const q = "SELEC v FROM t WHERE id = ?"
	syntax := &mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax"}
	mc.primary().mock.ExpectPrepare(q).WillReturnError(syntax)
	st, err := mc.db.PrepareContext(ctx, q)
	if st != nil {
		st.Close()
	}
	assert.True(t, err == error(syntax), "want the server's error itself, got %T %v", err, err)
	mc.verify()
}

// A prepared read used inside a transaction runs on the transaction's
// connection.
func TestMockPreparedInTx(t *testing.T) {
	mc := newMockCluster(t, 2)
	ctx := context.Background()
	const q = "SELECT v FROM t WHERE id = ?"
	p := mc.primary()
	p.mock.ExpectPrepare(q).WillBeClosed() // checked at Prepare
	st := mc.prepare(ctx, q)
	p.mock.ExpectBegin()
	p.mock.ExpectPrepare(q).WillBeClosed().ExpectQuery().WithArgs(int64(1)).
		WillReturnRows(sqlmock.NewRows([]string{"node"}).AddRow("primary"))
	p.mock.ExpectCommit()

	tx, err := mc.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	var got string
	require.NoError(t, tx.StmtContext(ctx, st).QueryRowContext(ctx, 1).Scan(&got))
	assert.Equal(t, "primary", got)
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "one primary connection, which runs the transaction")
	require.NoError(t, tx.Commit())
	assert.Equal(t, mc.busyOnly("primary", 1), mc.busy(), "the idle logical connection keeps its primary connection")
	mc.dropIdle()
	assert.Equal(t, mc.idle(), mc.busy())
	mc.verify()
}
