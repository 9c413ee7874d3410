package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayRun is what the writers of a replay chaos test saw.
type replayRun struct {
	mu        sync.Mutex
	committed []int            // ledger ids whose COMMIT succeeded
	unknown   []int            // ledger ids whose COMMIT outcome is unknown
	failed    map[string][]int // other failures, by error text
}

// replayChaos runs 8 writers, each looping over transactions on its own
// account (SELECT … FOR UPDATE, UPDATE, INSERT into a ledger, COMMIT),
// through fault, with transaction replay on; then checks that every
// committed transaction's ledger row exists exactly once, that no failed
// one left a row, and that every account's balance is its ledger's size.
func replayChaos(t *testing.T, name string, fault func(context.Context, *lab.Lab) error) (*replayRun, rwshard.Stats) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 3*time.Minute)
	const writers = 8
	setup(t, l, "CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL)",
		"CREATE TABLE ledger (id INT PRIMARY KEY, account INT NOT NULL, seen INT NOT NULL)",
		"INSERT INTO accounts SELECT seq, 0 FROM seq_1_to_8")
	db, events := chaosDB(t, l, "rwshard.txReplay=true&rwshard.probeInterval=250ms&rwshard.probeTimeout=200ms&rwshard.connectTimeout=1s&rwshard.writePause=20s")
	labtest.WaitReady(t, db)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)

	run := &replayRun{failed: map[string][]int{}}
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 1; w <= writers; w++ {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := int(next.Add(1))
				err := transfer(ctx, db, w, id)
				run.mu.Lock()
				switch {
				case err == nil:
					run.committed = append(run.committed, id)
				case errors.Is(err, rwshard.ErrOutcomeUnknown):
					run.unknown = append(run.unknown, id)
				default:
					run.failed[err.Error()] = append(run.failed[err.Error()], id)
				}
				run.mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second)
	begin := time.Now()
	require.NoError(t, fault(ctx, l), name)
	t.Logf("%s took %v", name, time.Since(begin).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	st := c.Stats()
	t.Logf("events: %v", events.all())

	// What the servers hold, read on the writable node.
	var primary *lab.Node
	for _, n := range l.Nodes() {
		var ro int
		require.NoError(t, n.Admin().QueryRowContext(ctx, "SELECT @@read_only").Scan(&ro))
		if ro == 0 {
			primary = n
		}
	}
	require.NotNil(t, primary)
	d := direct(t, primary, "")
	have := map[int]int{}
	rows, err := d.QueryContext(ctx, "SELECT id, COUNT(*) FROM ledger GROUP BY id")
	require.NoError(t, err)
	for rows.Next() {
		var id, n int
		require.NoError(t, rows.Scan(&id, &n))
		have[id] = n
	}
	require.NoError(t, rows.Err())
	run.mu.Lock()
	defer run.mu.Unlock()
	for _, id := range run.committed {
		assert.Equal(t, 1, have[id], "committed transaction %d: ledger rows", id)
	}
	for _, ids := range run.failed {
		for _, id := range ids {
			assert.Zero(t, have[id], "failed transaction %d left a row", id)
		}
	}
	for _, id := range run.unknown {
		assert.LessOrEqual(t, have[id], 1, "outcome-unknown transaction %d: at most once", id)
	}
	for w := 1; w <= writers; w++ {
		var balance, entries int
		require.NoError(t, d.QueryRowContext(ctx, "SELECT balance, (SELECT COUNT(*) FROM ledger WHERE account = ?) FROM accounts WHERE id = ?", w, w).Scan(&balance, &entries))
		assert.Equal(t, entries, balance, "account %d: balance against ledger", w)
	}
	var failed int
	for _, ids := range run.failed {
		failed += len(ids)
	}
	t.Logf("%s: %d transactions committed, %d outcome unknown, %d failed %v; replays %d, refused %d",
		name, len(run.committed), len(run.unknown), failed, keys(run.failed), st.Replays, st.ReplaysRefused)
	return run, st
}

// transfer is one writer transaction: read the account under lock,
// update it, write a ledger row with what was read.
func transfer(ctx context.Context, db *sql.DB, account, id int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var balance int
	if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", account).Scan(&balance); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = ?", account); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger VALUES (?, ?, ?)", id, account, balance); err != nil {
		return err
	}
	return tx.Commit()
}

func keys(m map[string][]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s ×%d", k, len(v)))
	}
	return out
}

// A planned switchover under 8 writers in transactions: with replay, no
// transaction fails, and every committed one is there exactly once.
func TestChaosReplaySwitchover(t *testing.T) {
	run, st := replayChaos(t, "switchover", func(ctx context.Context, l *lab.Lab) error {
		return l.Switchover(ctx, l.Replicas()[1])
	})
	assert.Empty(t, run.failed, "transactions failed through the switchover")
	assert.Empty(t, run.unknown)
	assert.NotEmpty(t, run.committed)
	assert.Zero(t, st.ReplaysRefused)
}

// The primary SIGKILLed and restarted under 8 writers in transactions:
// transactions in flight are replayed once it is back; a COMMIT whose
// answer was lost is reported as outcome unknown, never replayed; every
// committed transaction is there exactly once.
func TestChaosReplayPrimaryKilled(t *testing.T) {
	run, st := replayChaos(t, "primary SIGKILL + restart", func(ctx context.Context, l *lab.Lab) error {
		if err := l.Kill(l.Primary()); err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		return l.Restart(ctx, l.Primary())
	})
	assert.NotEmpty(t, run.committed)
	assert.True(t, st.Replays > 0, "transactions in flight at the kill were replayed")
	assert.Empty(t, run.failed, "transactions failed though the primary came back within writePause")
}

// Replay on a killed transaction connection: it continues when every
// replayed result matches; it is refused (ReplayError, nothing
// committed) when a result the caller already read has changed, or when
// the log is over rwshard.replayLimit.
func TestLabReplay(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS rp (id INT PRIMARY KEY, v INT)", "REPLACE INTO rp VALUES (1, 0), (2, 0)")
	other := direct(t, l.Primary(), "")
	for _, tc := range []struct {
		name, params string
		change       bool   // another client changes what the transaction read
		refused      string // "": the transaction continues
	}{
		{"results match", "", false, ""},
		{"a read result changed", "", true, "result differs"},
		{"log full", "&rwshard.replayLimit=1", false, "rwshard.replayLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := other.ExecContext(ctx, "UPDATE rp SET v = 0")
			require.NoError(t, err)
			db, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.txReplay=true&rwshard.consistency=eventual"+tc.params))
			require.NoError(t, err)
			defer db.Close()
			labtest.WaitReady(t, db)
			conn, err := db.Conn(ctx)
			require.NoError(t, err)
			defer conn.Close()
			var connID int64
			require.NoError(t, conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&connID))
			tx, err := conn.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer tx.Rollback()
			var v int
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT v FROM rp WHERE id = 1").Scan(&v))
			_, err = tx.ExecContext(ctx, "UPDATE rp SET v = v + 10 WHERE id = 2")
			require.NoError(t, err)
			if tc.change {
				_, err = other.ExecContext(ctx, "UPDATE rp SET v = 5 WHERE id = 1")
				require.NoError(t, err)
			}
			_, err = other.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", connID))
			require.NoError(t, err)

			_, err = tx.ExecContext(ctx, "UPDATE rp SET v = v + 1 WHERE id = 2")
			if tc.refused == "" {
				require.NoError(t, err, "the transaction continues on a new connection")
				require.NoError(t, tx.Commit())
				require.NoError(t, other.QueryRowContext(ctx, "SELECT v FROM rp WHERE id = 2").Scan(&v))
				assert.Equal(t, 11, v, "both updates, once each")
				return
			}
			var re *rwshard.ReplayError
			require.True(t, errors.As(err, &re), "want a ReplayError, got %v", err)
			assert.True(t, errors.Is(err, rwshard.ErrReplayRefused))
			assert.Contains(t, re.Reason, tc.refused)
			require.NoError(t, other.QueryRowContext(ctx, "SELECT v FROM rp WHERE id = 2").Scan(&v))
			assert.Zero(t, v, "nothing of the refused transaction was committed")
		})
	}
}
