package rwshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
