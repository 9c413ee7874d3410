package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection that sets its time zone, SQL mode or character set keeps
// reading on the replicas, each replica answering with the setting; a
// connection that did not set it sees the DSN's value on the same backend
// connections (one backend connection per node here, so both logical
// connections share them); a bad value is the server's error and changes
// nothing; the setting costs one SET per backend connection, not one per
// statement.
func TestLabSessionVarsWithoutPinning(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtestCtx(t)
	db, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.maxOpenConns=1"))
	require.NoError(t, err)
	defer db.Close()
	labtest.WaitReady(t, db)
	a, err := db.Conn(ctx)
	require.NoError(t, err)
	defer a.Close()
	b, err := db.Conn(ctx)
	require.NoError(t, err)
	defer b.Close()

	var plain string
	require.NoError(t, b.QueryRowContext(ctx, "SELECT @@time_zone").Scan(&plain))

	_, err = a.ExecContext(ctx, "SET time_zone = '+05:00', sql_mode = 'ANSI_QUOTES'")
	require.NoError(t, err)
	_, err = a.ExecContext(ctx, "SET NAMES latin1")
	require.NoError(t, err)
	// Every new backend connection asks for session tracking with one SET
	// at connect (sessiontrack.go): counted apart from the settings.
	setsBefore := int64(0)
	for _, r := range l.Replicas() {
		setsBefore += statusCounter(t, r, "Com_set_option") - statusCounter(t, r, "Connections")
	}
	served := map[string]int{}
	for range 10 {
		var tz, mode, cs string
		var id int64
		require.NoError(t, a.QueryRowContext(ctx, "SELECT @@time_zone, @@sql_mode, @@character_set_client, @@server_id").Scan(&tz, &mode, &cs, &id))
		served[l.NodeByServerID(id)]++
		assert.Equal(t, "+05:00", tz)
		assert.Equal(t, "ANSI_QUOTES", mode)
		assert.Equal(t, "latin1", cs)
	}
	assert.Zero(t, served["primary"], "reads after SET stay on the replicas: %v", served)
	assert.Equal(t, 2, len(served), "both replicas serve: %v", served)
	setsAfter := int64(0)
	for _, r := range l.Replicas() {
		setsAfter += statusCounter(t, r, "Com_set_option") - statusCounter(t, r, "Connections")
	}
	assert.LessOrEqual(t, setsAfter-setsBefore, int64(2), "one SET per replica connection, not per read")

	// The other connection, on the same backend connections, sees the DSN's
	// settings.
	for range 4 {
		var tz, cs string
		require.NoError(t, b.QueryRowContext(ctx, "SELECT @@time_zone, @@character_set_client").Scan(&tz, &cs))
		assert.Equal(t, plain, tz)
		assert.NotEqual(t, "latin1", cs)
		require.NoError(t, a.QueryRowContext(ctx, "SELECT @@time_zone").Scan(&tz))
		assert.Equal(t, "+05:00", tz)
	}

	// A value the server refuses: its error, nothing changes.
	_, err = a.ExecContext(ctx, "SET time_zone = 'Nowhere/Atlantis'")
	var me *mysql.MySQLError
	require.True(t, errors.As(err, &me) && me.Number == 1298, "unknown time zone: %v", err)
	var tz string
	require.NoError(t, a.QueryRowContext(ctx, "SELECT @@time_zone").Scan(&tz))
	assert.Equal(t, "+05:00", tz)

	// Writes see the settings too (ANSI_QUOTES: "x" is an identifier).
	_, err = a.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS "vars_t" (id INT PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = a.ExecContext(ctx, `DROP TABLE "vars_t"`)
	require.NoError(t, err)

	// A user variable is replayed too.
	_, err = a.ExecContext(ctx, "SET @x = 1")
	require.NoError(t, err)
	var x int
	var sid int64
	require.NoError(t, a.QueryRowContext(ctx, "SELECT @x, @@server_id").Scan(&x, &sid))
	assert.Equal(t, 1, x)
	assert.NotEqual(t, "primary", l.NodeByServerID(sid))
	// A SET rwshard cannot replay (a variable it does not know) pins.
	_, err = a.ExecContext(ctx, "SET SESSION optimizer_switch = 'index_merge=off'")
	require.NoError(t, err)
	assert.Equal(t, "primary", ranOn(t, l, a, ctx, "SELECT @@server_id"))
}

func labtestCtx(t *testing.T) context.Context { return labtest.Ctx(t, time.Minute) }
