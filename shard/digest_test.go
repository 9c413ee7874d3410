package shard

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func digestOf(t *testing.T, yaml string) string {
	t.Helper()
	sc, err := ParseYAML([]byte(yaml))
	require.NoError(t, err)
	r, err := sc.Build(nil)
	require.NoError(t, err)
	return r.Digest()
}

// The digest is stable, ignores addresses and credentials, and changes
// with what places rows.
func TestRulesDigest(t *testing.T) {
	data, err := os.ReadFile("testdata/rules/native.yaml")
	require.NoError(t, err)
	base := string(data)
	d := digestOf(t, base)
	assert.Regexp(t, `^[0-9a-f]{12}$`, d)
	assert.Equal(t, d, digestOf(t, base), "the same rules built twice")

	moved := strings.ReplaceAll(strings.ReplaceAll(base, "app:pw@", "app:S3cret@"), "10.0.0.1", "db1.internal")
	require.NotEqual(t, base, moved)
	assert.Equal(t, d, digestOf(t, moved), "other credentials and addresses, same rules")

	for what, changed := range map[string]string{
		"algorithm": strings.Replace(base, "type: HASH_MOD ", "type: SS_HASH_MOD ", 1),
		"default":   strings.Replace(base, "defaultDataSource: ds_0", "defaultDataSource: ds_1", 1),
		"expression": strings.Replace(strings.Replace(base, "t_order_${order_id % 2}", "t_order_${(order_id + 1) % 2}", 1),
			"t_order_item_${order_id % 2}", "t_order_item_${(order_id + 1) % 2}", 1),
		"broadcast": strings.Replace(base, "broadcastTables: [t_config, t_region]", "broadcastTables: [t_config]", 1),
	} {
		require.NotEqual(t, base, changed, what)
		assert.NotEqual(t, d, digestOf(t, changed), "changed %s, same digest", what)
	}
}

func TestWithRules(t *testing.T) {
	assert.Equal(t, "rwshard_rules:abc", withRules("", "abc"))
	assert.Equal(t, "team:x,rwshard_rules:abc", withRules("team:x", "abc"))
	assert.Equal(t, "rwshard_rules:mine,team:x", withRules("rwshard_rules:mine,team:x", "abc"), "the caller's wins")
}
