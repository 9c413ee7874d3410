package rwshard

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// A prepared statement remembers its route per connection state
// (stmt.routes): every execution must still be routed as the same
// text would be, in and out of transactions and pinned sessions, with and
// without a hint in the context, in any order.
func TestPreparedRouteMatchesText(t *testing.T) {
	c := benchConn(t)
	bg := context.Background()
	ctxs := map[string]context.Context{
		"none":    bg,
		"primary": hint.Primary(bg),
		"replica": hint.Replica(bg),
		"pool":    hint.Pool(bg, "reports"),
	}
	queries := []string{
		"SELECT name FROM t WHERE id = ?",
		"/* rwshard:primary */ SELECT name FROM t WHERE id = ?",
		"UPDATE t SET n = n + 1 WHERE id = ?",
		"SELECT name FROM t WHERE id = ? FOR UPDATE",
		"SELECT GET_LOCK('x', 1)",
		"SET @x = ?",
		"/* rwshard:node=replica2 */ SELECT name FROM t WHERE id = ?",
		"/* rwshard:node=replica2 */ SELECT GET_LOCK('x', 1)", // refused: it pins
	}
	states := []struct {
		name         string
		inTx, pinned bool
	}{{"autocommit", false, false}, {"transaction", true, false}, {"pinned", false, true}, {"pinned transaction", true, true}, {"autocommit again", false, false}}
	for _, q := range queries {
		ps := &stmt{c: c, q: q} // one statement through every state
		for _, st := range states {
			c.textTx, c.dirty = st.inTx, st.pinned
			for _, name := range []string{"none", "primary", "none", "replica", "pool", "none"} {
				var pr, tr routed
				prepared, perr := c.route(ctxs[name], q, ps, &pr)
				text, terr := c.route(ctxs[name], q, nil, &tr)
				where := fmt.Sprintf("%q, %s, context hint %s", q, st.name, name)
				require.Equal(t, terr, perr, where)
				if terr != nil {
					continue
				}
				assert.Equal(t, text.d, prepared.d, where)
				assert.Equal(t, text.h, prepared.h, where)
				assert.Equal(t, text.cls, prepared.cls, where)
			}
		}
	}
	c.textTx, c.dirty = false, false
}

// A prepared write is routed once per connection state: its next
// executions get the route it remembers. What decides a read for a
// replica can change between two executions (a read the replicas refused
// runs on the primary from then on): that route is not remembered.
func TestPreparedReadRoutedAnew(t *testing.T) {
	c := benchConn(t)
	ctx := context.Background()
	w := &stmt{c: c, q: "UPDATE t SET n = 1 WHERE id = ?"}
	var wr routed
	first, err := c.route(ctx, w.q, w, &wr)
	require.NoError(t, err)
	assert.True(t, first == &wr, "the first execution is routed")
	again, err := c.route(ctx, w.q, w, &wr)
	require.NoError(t, err)
	assert.True(t, again == w.routes[0], "the next one gets the remembered route")
	const q = "SELECT name FROM t WHERE id = ?"
	ps := &stmt{c: c, q: q}
	var r routed
	for range 2 {
		got, err := c.route(ctx, q, ps, &r)
		require.NoError(t, err)
		assert.Equal(t, route.ToReplica, got.d.Target)
	}
	c.cl.rememberPrimaryOnly(q)
	got, err := c.route(ctx, q, ps, &r)
	require.NoError(t, err)
	assert.Equal(t, route.ToPrimary, got.d.Target)
	assert.Equal(t, router.ReasonStoredFunction, got.d.Reason)
}
