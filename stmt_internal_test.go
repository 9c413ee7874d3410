package rwshard

import (
	"context"
	"fmt"
	"testing"

	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/require"

	"github.com/rwshard/rwshard/hint"
)

// A prepared statement remembers its routing decision per connection
// state (stmt.decide): every execution must still be routed as the same
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
				var prepared, text routed
				perr := c.route(ctxs[name], q, ps, &prepared)
				terr := c.route(ctxs[name], q, nil, &text)
				where := fmt.Sprintf("%q, %s, context hint %s", q, st.name, name)
				require.Equal(t, terr, perr, where)
				assert.Equal(t, text.d, prepared.d, where)
				assert.Equal(t, text.h, prepared.h, where)
				assert.Equal(t, text.cls, prepared.cls, where)
			}
		}
	}
	c.textTx, c.dirty = false, false
}
