package lab_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// A lab attached from its saved state takes the faults as the lab that
// started it does: its servers are found by pid, not held as children, so
// Kill must see the exit by polling, and a restarted node is detached
// again with a new pid that the state then records.
func TestAttachFaults(t *testing.T) {
	l, _ := labtest.Detached(t, 1)
	ctx := labtest.Ctx(t, 2*time.Minute)
	s := l.State()
	a, err := lab.Attach(&s)
	require.NoError(t, err)
	// Registered after Detached's cleanup, so it runs first: it kills the
	// node restarted from here, which Detached's lab does not know.
	t.Cleanup(func() { _ = a.Stop() })

	require.Len(t, a.Groups, 1)
	require.Len(t, a.Nodes(), 2)
	for i, n := range a.Nodes() {
		o := l.Nodes()[i]
		assert.Equal(t, []any{o.Name, o.Group, o.ServerID, o.Port, o.Dir}, []any{n.Name, n.Group, n.ServerID, n.Port, n.Dir})
		assert.True(t, n.Running(), n.Name)
	}
	assert.Equal(t, "primary", a.Primary().Name)
	assert.Equal(t, s, a.State(), "attaching changed the state")
	r := a.Replicas()[0]

	require.NoError(t, a.Pause(r))
	assert.True(t, a.State().Nodes[1].Paused())
	require.NoError(t, a.Resume(r))
	assert.False(t, a.State().Nodes[1].Paused())

	require.NoError(t, a.Kill(r))
	assert.False(t, r.Running())
	assert.False(t, s.Nodes[1].Alive(), "the killed pid is still a lab server")
	assert.Zero(t, a.State().Nodes[1].PID)

	_, err = appDB(t, a.Primary(), "").ExecContext(ctx, "CREATE TABLE IF NOT EXISTS attached (id INT PRIMARY KEY)")
	require.NoError(t, err)
	require.NoError(t, a.Restart(ctx, r))
	restarted := a.State().Nodes[1]
	assert.True(t, restarted.Alive())
	assert.NotEqual(t, s.Nodes[1].PID, restarted.PID)
	require.NoError(t, a.Sync(ctx, 20*time.Second), "the restarted replica does not catch up")

	require.NoError(t, a.Switchover(ctx, r))
	after := a.State()
	assert.False(t, after.Nodes[0].Primary)
	assert.True(t, after.Nodes[1].Primary)

	// Attached again from the new state: roles and pids follow it, and
	// Release lets go without stopping anything.
	b, err := lab.Attach(&after)
	require.NoError(t, err)
	assert.Equal(t, r.Name, b.Primary().Name)
	assert.Equal(t, after, b.State())
	b.Release()
	for _, n := range after.Nodes {
		assert.True(t, n.Alive(), "Release stopped %s", n.Name)
	}
}

func TestAttachRefusesBadState(t *testing.T) {
	_, err := lab.Attach(&lab.State{Dir: "/x", Nodes: []lab.NodeState{{Name: "a", Group: "ds_0"}}})
	assert.ErrorContains(t, err, "group ds_0 has no primary")
	_, err = lab.Attach(&lab.State{Dir: "/x", Nodes: []lab.NodeState{
		{Name: "a", Group: "ds_0", Primary: true}, {Name: "b", Group: "ds_0", Primary: true}}})
	assert.ErrorContains(t, err, "group ds_0 has two primaries, a and b")

	// Servers that are not running are attached as stopped.
	a, err := lab.Attach(&lab.State{Dir: "/x", Nodes: []lab.NodeState{
		{Name: "p", Group: "ds_0", Primary: true, PID: 1}, {Name: "r", Group: "ds_0"}}})
	require.NoError(t, err)
	defer a.Release()
	for _, n := range a.Nodes() {
		assert.False(t, n.Running(), n.Name)
	}
	assert.Equal(t, "r", a.Replicas()[0].Name)
}
