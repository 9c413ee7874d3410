package rwshard_test

import (
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A SELECT that calls a stored function that writes runs on the primary:
// by default, because the function is not a built-in; and when the
// configuration wrongly says it is safe on replicas, because the replica
// refuses it (1290: it did not run there) and rwshard runs it on the
// primary, and sends that statement to the primary from then on.
func TestLabStoredFunction(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS bumps (id INT AUTO_INCREMENT PRIMARY KEY)", "DELETE FROM bumps")
	for _, n := range l.Nodes() { // binary logging refuses a writing function without it, on the replicas too
		_, err := n.Admin().ExecContext(ctx, "SET GLOBAL log_bin_trust_function_creators = 1")
		require.NoError(t, err)
	}
	_, err := l.Primary().Admin().ExecContext(ctx, "CREATE FUNCTION IF NOT EXISTS app.bump() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA "+
		"BEGIN INSERT INTO app.bumps VALUES (NULL); RETURN 1; END")
	require.NoError(t, err) // as root: binary logging refuses it to the application user
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	count := func() int {
		var n int
		require.NoError(t, direct(t, l.Primary(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM bumps").Scan(&n))
		return n
	}

	db := openLab(t, l, "")
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	var one int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT bump()").Scan(&one))
	assert.Equal(t, 1, count())
	assert.Equal(t, uint64(1), c.Stats().Routes["stored-function"])
	p, err := rwshard.Explain(ctx, db, "SELECT bump()")
	require.NoError(t, err)
	assert.Equal(t, "stored-function", p.Reason)
	assert.Equal(t, []string{"primary"}, p.Targets)

	// Declared safe, wrongly: the replica refuses, the primary runs it.
	safe := openLab(t, l, "rwshard.replicaFunctions=bump&rwshard.consistency=eventual")
	sc, err := rwshard.ConnectorOf(ctx, safe)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, safe.QueryRowContext(ctx, "SELECT bump() FROM DUAL").Scan(&one))
	}
	assert.Equal(t, 4, count(), "each ran once, on the primary")
	assert.Equal(t, uint64(3), sc.Stats().Routes["stored-function"])
	p, err = rwshard.Explain(ctx, safe, "SELECT bump() FROM DUAL")
	require.NoError(t, err)
	assert.Equal(t, "stored-function", p.Reason, "remembered: the statement goes to the primary now")
	p, err = rwshard.Explain(ctx, safe, "SELECT bump()")
	require.NoError(t, err)
	assert.Equal(t, "replica", p.Reason, "another text is not remembered: declared safe")
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	for _, r := range l.Replicas() {
		var n int
		require.NoError(t, direct(t, r, "").QueryRowContext(ctx, "SELECT COUNT(*) FROM bumps").Scan(&n))
		assert.Equal(t, 4, n, "%s has the primary's rows, replicated, no more", r.Name)
	}
}
