package rwshard_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// A mistyped statement with a password: the server's syntax error quotes
// it, and neither the route log nor Explain's text shows it; the words of
// the error stay readable.
func TestMockSecretsStayOut(t *testing.T) {
	var buf bytes.Buffer
	mc := newMockCluster(t, 1, func(c *rwshard.Config) {
		c.RouteLog, c.Logger = true, slog.New(slog.NewTextHandler(&buf, nil))
	})
	const q = "CREATE USERR x IDENTIFIED BY 'hunter2'"
	mc.primary().expectError(q, true, &mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax; " +
		"check the manual that corresponds to your MariaDB server version for the right syntax to use near 'USERR x IDENTIFIED BY 'hunter2'' at line 1"})
	_, err := mc.db.ExecContext(context.Background(), q)
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me, "the caller gets the server's error as it is")
	assert.NotContains(t, buf.String(), "hunter2")
	assert.Contains(t, buf.String(), "near '?' at line 1")

	mc.primary().expectError("INSERT INTO t VALUES ('ada@example.com')", true,
		&mysql.MySQLError{Number: 1062, Message: "Duplicate entry 'ada@example.com' for key 'email'"})
	_, _ = mc.db.ExecContext(context.Background(), "INSERT INTO t VALUES ('ada@example.com')")
	assert.NotContains(t, buf.String(), "ada@example.com")
	mc.primary().expectError("SELECT * FROM nope FOR UPDATE", false, &mysql.MySQLError{Number: 1146, Message: "Table 'app.nope' doesn't exist"})
	_, _ = mc.db.QueryContext(context.Background(), "SELECT * FROM nope FOR UPDATE")
	assert.Contains(t, buf.String(), "doesn't exist", "apostrophes of words stay")

	p, err := rwshard.Explain(context.Background(), mc.db, q)
	require.NoError(t, err)
	assert.NotContains(t, p.String(), "hunter2")
	assert.Contains(t, p.String(), "IDENTIFIED BY '?'")
}
