package rwshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// With a bounded primary pool, a logical connection gives its clean held
// primary connection back when it goes idle: an idle logical connection
// cannot hold the last connection of the bound and leave another one's
// write waiting for ever.
func TestMockBoundedPoolNotStarved(t *testing.T) {
	mc := newMockCluster(t, 1)
	p := mc.primary()
	p.db.SetMaxOpenConns(2) // the test's own marker connection and one more
	ctx := context.Background()
	c1, c2 := mc.conn(ctx), mc.conn(ctx)
	p.expectWrite("UPDATE t SET v = 1")
	p.expectWrite("UPDATE t SET v = 2")
	_, err := c1.ExecContext(ctx, "UPDATE t SET v = 1")
	require.NoError(t, err)
	require.NoError(t, c1.Close())
	assert.Equal(t, mc.idle(), mc.busy(), "the idle logical connection holds nothing of a bounded pool")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = c2.ExecContext(wctx, "UPDATE t SET v = 2")
	require.NoError(t, err, "the second connection's write got the primary connection")
}

// A node hint on a session statement is refused, not ignored: the
// statement would pin the primary connection, not run where the hint
// says. Aimed at the primary, it runs.
func TestMockNodeHintOnSessionStatement(t *testing.T) {
	mc := newMockCluster(t, 1)
	ctx := context.Background()
	for _, tc := range []struct {
		ctx context.Context
		q   string
	}{
		{ctx, "/* rwshard:node=replica1 */ SET @a = 1"},
		{hint.Node(ctx, "replica1"), "SET @a = 1"},
		{hint.Node(ctx, "replica1"), "BEGIN"},
	} {
		_, err := mc.db.ExecContext(tc.ctx, tc.q)
		assert.ErrorIs(t, err, rwshard.ErrWriteToReplica, tc.q)
	}
	_, err := mc.db.ExecContext(hint.Node(ctx, "replica9"), "SET @a = 1")
	assert.ErrorIs(t, err, rwshard.ErrUnknownNode)
	mc.primary().expectWrite("SET @a = 1")
	_, err = mc.db.ExecContext(hint.Node(ctx, "primary"), "SET @a = 1")
	require.NoError(t, err)
}
