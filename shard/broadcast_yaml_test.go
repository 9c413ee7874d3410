package shard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// allowBroadcastWrites in rwshard's YAML: rules-wide and per table.
func TestYAMLAllowBroadcastWrites(t *testing.T) {
	const base = `
dataSources:
  ds_0: {primary: "u:p@tcp(127.0.0.1:3306)/db_0"}
  ds_1: {primary: "u:p@tcp(127.0.0.1:3307)/db_1"}
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: {column: user_id, algorithm: db_mod}
%s
  t_item:
    dataNodes: ds_${0..1}.t_item
    databaseStrategy: {column: user_id, algorithm: db_mod}
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
%s
`
	build := func(table, global string) *Rules {
		t.Helper()
		c, err := ParseYAML([]byte(fmt.Sprintf(base, table, global)))
		require.NoError(t, err)
		r, err := c.Build(nil)
		require.NoError(t, err)
		return r
	}
	r := build("", "")
	assert.False(t, r.AllowBroadcastWrites)
	assert.False(t, r.Tables["t_order"].AllowBroadcastWrites)
	r = build("    allowBroadcastWrites: true", "")
	assert.False(t, r.AllowBroadcastWrites)
	assert.True(t, r.Tables["t_order"].AllowBroadcastWrites)
	assert.False(t, r.Tables["t_item"].AllowBroadcastWrites)
	rt, err := NewRouter(r).Route("DELETE FROM t_order WHERE note = 'x'", nil)
	require.NoError(t, err)
	assert.Len(t, rt.Units, 2)
	_, err = NewRouter(r).Route("DELETE FROM t_item WHERE note = 'x'", nil)
	assert.ErrorIs(t, err, ErrNoShardKey)
	r = build("", "allowBroadcastWrites: true")
	assert.True(t, r.AllowBroadcastWrites)

	_, err = ParseYAML([]byte(fmt.Sprintf(base, "    allowBroadcastWrites: yes please", "")))
	var ce *rwshard.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Key, "allowBroadcastWrites")
}
