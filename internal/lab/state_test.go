package lab_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

func TestStateSaveLoadStop(t *testing.T) {
	l, _ := labtest.Detached(t, 1)
	path := filepath.Join(t.TempDir(), "state.json")
	require.NoError(t, l.Save(path))

	s, err := lab.Load(path)
	require.NoError(t, err)
	assert.Equal(t, l.Dir, s.Dir)
	require.Len(t, s.Nodes, 2)
	for i, n := range l.Nodes() {
		got := s.Nodes[i]
		assert.Equal(t, n.Name, got.Name)
		assert.Equal(t, n.Group, got.Group)
		assert.Equal(t, n.ServerID, got.ServerID)
		assert.Equal(t, n.Port, got.Port)
		assert.Equal(t, n.Addr(), got.Addr())
		assert.Equal(t, n.Dir, got.Dir)
		assert.Positive(t, got.PID, n.Name)
		assert.True(t, got.Alive(), "%s (pid %d) not alive", n.Name, got.PID)
		assert.Contains(t, lab.Leftovers(), got.PID)
	}
	assert.Equal(t, []string{"ds_0"}, s.Groups())
	require.NotNil(t, s.Primary("ds_0"))
	assert.Equal(t, "primary", s.Primary("ds_0").Name)
	assert.False(t, s.Nodes[1].Primary)
	assert.Nil(t, s.Primary("ds_9"))

	killed, err := s.Stop()
	require.NoError(t, err)
	assert.Equal(t, 2, killed)
	for _, n := range s.Nodes {
		assert.False(t, n.Alive(), n.Name)
		assert.NotContains(t, lab.Leftovers(), n.PID, n.Name)
	}
	assert.NoDirExists(t, s.Dir)

	// Stopping a lab that is gone is not an error and kills nothing.
	killed, err = s.Stop()
	require.NoError(t, err)
	assert.Zero(t, killed)
}

func TestReapInKillsOnlyUnderDir(t *testing.T) {
	l, parent := labtest.Detached(t, 0)
	s := l.State()
	require.Len(t, s.Nodes, 1)
	pid := s.Nodes[0].PID
	require.True(t, s.Nodes[0].Alive())

	assert.Equal(t, []int{pid}, lab.LeftoversIn(parent))
	assert.Empty(t, lab.LeftoversIn(t.TempDir()), "a server outside the directory was listed")
	assert.Zero(t, lab.ReapIn(t.TempDir()))
	assert.True(t, s.Nodes[0].Alive(), "reaped a server outside the directory")

	assert.Equal(t, 1, lab.ReapIn(parent))
	require.Eventually(t, func() bool { return !s.Nodes[0].Alive() }, 30*time.Second, 10*time.Millisecond)
	assert.NotContains(t, lab.Leftovers(), pid)
}

func TestStateStopLeavesForeignProcessesAndDirs(t *testing.T) {
	// A pid that is not a lab server (here a sleep; in life a reused pid)
	// must not be signalled, and a directory not named like a lab's must
	// not be removed, whatever the state file says.
	sleep := exec.Command("sleep", "60")
	require.NoError(t, sleep.Start())
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	dir := t.TempDir()
	s := &lab.State{Dir: dir, Nodes: []lab.NodeState{{Name: "primary", PID: sleep.Process.Pid, Dir: filepath.Join(dir, "primary")}}}
	assert.False(t, s.Nodes[0].Alive())

	killed, err := s.Stop()
	assert.Zero(t, killed)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a lab directory")
	assert.DirExists(t, dir)
	assert.NoError(t, sleep.Process.Signal(syscall.Signal(0)), "the foreign process was killed")
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := lab.Load(filepath.Join(dir, "missing.json"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o644))
	_, err = lab.Load(bad)
	assert.Error(t, err)

	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte("{}"), 0o644))
	_, err = lab.Load(empty)
	assert.ErrorContains(t, err, "not a lab state")
}

func TestStateGroupsSharded(t *testing.T) {
	s := &lab.State{Dir: "/x", Nodes: []lab.NodeState{
		{Name: "ds_0-primary", Group: "ds_0", Primary: true}, {Name: "ds_0-replica1", Group: "ds_0"},
		{Name: "ds_1-primary", Group: "ds_1"}, {Name: "ds_1-replica1", Group: "ds_1", Primary: true},
	}}
	assert.Equal(t, []string{"ds_0", "ds_1"}, s.Groups())
	assert.Equal(t, "ds_1-replica1", s.Primary("ds_1").Name)
	assert.False(t, slices.ContainsFunc(s.Nodes, func(n lab.NodeState) bool { return n.Alive() }))
}
