package shard

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testColumns is t_order's column list in the test rules' world.
var testColumns = ColumnSourceFunc(func(_ context.Context, table string) ([]string, error) {
	if table == "t_order" {
		return []string{"order_id", "user_id", "note"}, nil
	}
	return nil, errors.New("no such table")
})

func TestRouteInsertWithoutColumns(t *testing.T) {
	rules, keys := routeTestRules()
	r := NewRouter(rules)
	ctx := context.Background()

	// All the columns: routed as if they had been written.
	rt, err := r.RouteContext(ctx, "INSERT INTO t_order VALUES (?, ?, 'x'), (6, 2, 'y')", routeArgs(int64(5), int64(1)), testColumns)
	require.NoError(t, err)
	want, err := r.Route("INSERT INTO t_order (order_id, user_id, note) VALUES (?, ?, 'x'), (6, 2, 'y')", routeArgs(int64(5), int64(1)))
	require.NoError(t, err)
	assert.Equal(t, want.Units, rt.Units)

	// One value fewer: every column but the generated key.
	keys.next = 41
	rt, err = r.RouteContext(ctx, "REPLACE INTO t_order VALUES (3, 'z')", nil, testColumns)
	require.NoError(t, err)
	require.Len(t, rt.Units, 1)
	assert.Equal(t, "ds_1", rt.Units[0].DataSource)
	assert.Equal(t, "replace into t_order_1(user_id, note, order_id) values (3, 'z', 1041)", rt.Units[0].SQL)
	assert.EqualValues(t, 1041, rt.LastInsertID)

	// Another count: refused, naming the columns.
	_, err = r.RouteContext(ctx, "INSERT INTO t_order VALUES (1)", nil, testColumns)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "1 values per row, table t_order has 3 columns (order_id, user_id, note)")

	// Without a column source (Route): refused, as before.
	_, err = r.Route("INSERT INTO t_order VALUES (1, 2, 'x')", nil)
	require.ErrorIs(t, err, ErrUnsupported)
	var re *RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "t_order", re.Table)

	// The source's error names the table and the statement.
	_, err = r.RouteContext(ctx, "INSERT INTO t_order_item VALUES (1, 2)", nil, testColumns)
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "t_order_item", re.Table)
	assert.Contains(t, err.Error(), "no such table")
}
