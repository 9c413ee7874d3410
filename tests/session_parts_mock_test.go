package rwshard_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// sessionCluster is a mock cluster in session consistency (health off, so
// no replica's data horizon is known: the session window decides) serving
// data source name.
func sessionCluster(t *testing.T, name string) *mockCluster {
	return newMockCluster(t, 1, func(c *rwshard.Config) {
		c.Consistency = rwshard.ConsistencySession
		c.DataSource = name
		withTokens(c)
	})
}

// ranOn runs a read through mc in ctx and returns the node that answered.
func ranOn(t *testing.T, ctx context.Context, mc *mockCluster, q string) string {
	t.Helper()
	var node string
	require.NoError(t, mc.db.QueryRowContext(ctx, q).Scan(&node))
	return node
}

// One session over two clusters (Config.DataSource names them, as the
// sharding module does for its data sources): a write on one keeps that
// cluster's reads on its primary for the session window, and leaves the
// other's reads on its replicas, in the session and after its token
// moved to another process. Without names the two clusters share the
// session's one part, as before.
func TestMockSessionPerCluster(t *testing.T) {
	ctx := context.Background()
	t.Run("named", func(t *testing.T) {
		a, b := sessionCluster(t, "ds_a"), sessionCluster(t, "ds_b")
		sctx := rwshard.WithSession(ctx)
		a.primary().expectWrite("INSERT INTO t VALUES (1)")
		_, err := a.db.ExecContext(sctx, "INSERT INTO t VALUES (1)")
		require.NoError(t, err)

		b.node("replica1").expectRead("SELECT b")
		assert.Equal(t, "replica1", ranOn(t, sctx, b, "SELECT b"), "ds_a's write is nothing to ds_b")
		a.primary().expectRead("SELECT a")
		assert.Equal(t, "primary", ranOn(t, sctx, a, "SELECT a"), "ds_a's own write: the session window")

		resumed, err := a.handOff(sctx)
		require.NoError(t, err)
		b.node("replica1").expectRead("SELECT b")
		assert.Equal(t, "replica1", ranOn(t, resumed, b, "SELECT b"), "resumed")
		a.primary().expectRead("SELECT a")
		assert.Equal(t, "primary", ranOn(t, resumed, a, "SELECT a"), "resumed")
	})
	t.Run("unnamed", func(t *testing.T) {
		a, b := sessionCluster(t, ""), sessionCluster(t, "")
		sctx := rwshard.WithSession(ctx)
		a.primary().expectWrite("INSERT INTO t VALUES (1)")
		_, err := a.db.ExecContext(sctx, "INSERT INTO t VALUES (1)")
		require.NoError(t, err)
		b.primary().expectRead("SELECT b")
		assert.Equal(t, "primary", ranOn(t, sctx, b, "SELECT b"), "one part for both")
	})
}
