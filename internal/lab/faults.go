package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lag delays the replica's applier by d (MASTER_DELAY, whole seconds);
// d = 0 removes the delay. Seconds_Behind_Master can still read 0 on a
// delayed replica with nothing new to apply: that is the point of testing it.
func (l *Lab) Lag(ctx context.Context, n *Node, d time.Duration) error {
	return n.Exec(ctx, fmt.Sprintf("STOP SLAVE; CHANGE MASTER TO MASTER_DELAY=%d; START SLAVE", int(d.Seconds())))
}

// StopReplication stops both replication threads on n.
func (l *Lab) StopReplication(ctx context.Context, n *Node) error {
	return n.Exec(ctx, "STOP SLAVE")
}

// StopSQLThread stops only the applier thread on n.
func (l *Lab) StopSQLThread(ctx context.Context, n *Node) error {
	return n.Exec(ctx, "STOP SLAVE SQL_THREAD")
}

// StartReplication starts both replication threads on n.
func (l *Lab) StartReplication(ctx context.Context, n *Node) error {
	return n.Exec(ctx, "START SLAVE")
}

// Pause freezes the node's process (SIGSTOP): connections stay open and
// nothing answers, like a hung host. It returns once every thread of the
// process is stopped (the signal is asynchronous: on a loaded machine a
// thread may still answer a moment after it is sent).
func (l *Lab) Pause(n *Node) error {
	if err := n.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	pid := n.pid()
	deadline := time.Now().Add(5 * time.Second)
	for !allStopped(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: %s: threads still running 5s after SIGSTOP", n.Name)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// allStopped reports whether every thread of pid is in state T (stopped).
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' && b[i+2] != 't' {
			return false
		}
	}
	return true
}

// Resume continues a paused node (SIGCONT).
func (l *Lab) Resume(n *Node) error { return n.signal(syscall.SIGCONT) }

// Kill ends the node's process with SIGKILL, like a crash.
func (l *Lab) Kill(n *Node) error { return n.kill() }

// Restart starts a killed node again with its data, port and current role,
// and waits until it accepts connections. A replica resumes replication on
// its own; a Galera node joins its cluster again (by incremental or
// snapshot state transfer) and Restart waits until it is Synced.
func (l *Lab) Restart(ctx context.Context, n *Node) error {
	if n.Running() {
		return fmt.Errorf("lab: restart %s: still running", n.Name)
	}
	if n.galera != nil {
		if err := n.recoverPosition(ctx); err != nil {
			return err
		}
	}
	if err := n.startAndWait(ctx); err != nil {
		return err
	}
	if n.galera != nil {
		return l.WaitSynced(ctx, n, 60*time.Second)
	}
	return nil
}

// Switchover makes newPrimary the primary of its group the way an operator
// (or orchestrator, MaxScale, replication-manager) does it: the old primary
// goes read_only, newPrimary catches up, stops replicating and becomes
// writable, the old primary and the other replicas replicate from it.
func (l *Lab) Switchover(ctx context.Context, newPrimary *Node) error {
	g := l.group(newPrimary)
	if g == nil {
		return fmt.Errorf("lab: switchover: %s belongs to no group", newPrimary.Name)
	}
	old := g.Primary()
	if old == newPrimary {
		return fmt.Errorf("lab: switchover: %s is already the primary", newPrimary.Name)
	}
	if err := old.setReadOnly(ctx, true); err != nil {
		return err
	}
	var pos string
	if err := old.Admin().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		return fmt.Errorf("lab: switchover: %s gtid_binlog_pos: %w", old.Name, err)
	}
	if err := newPrimary.waitGTID(ctx, pos, 30*time.Second); err != nil {
		return err
	}
	if err := newPrimary.Exec(ctx, "STOP SLAVE; RESET SLAVE ALL"); err != nil {
		return err
	}
	if err := newPrimary.setReadOnly(ctx, false); err != nil {
		return err
	}
	g.mu.Lock()
	g.primary = newPrimary
	g.mu.Unlock()

	// The old primary has never replicated: start it from its own binlog
	// position so it does not re-apply what it wrote itself.
	if err := old.Exec(ctx, "SET GLOBAL gtid_slave_pos = @@gtid_binlog_pos"); err != nil {
		return err
	}
	if err := old.replicateFrom(ctx, newPrimary); err != nil {
		return err
	}
	for _, r := range g.Replicas() {
		if r == old || !r.Running() {
			continue
		}
		if err := r.waitGTID(ctx, pos, 30*time.Second); err != nil {
			return err
		}
		if err := r.Exec(ctx, "STOP SLAVE"); err != nil {
			return err
		}
		if err := r.replicateFrom(ctx, newPrimary); err != nil {
			return err
		}
	}
	return nil
}

// setReadOnly sets @@global.read_only and remembers it for restarts.
func (n *Node) setReadOnly(ctx context.Context, on bool) error {
	if err := n.Exec(ctx, "SET GLOBAL read_only = "+onOff(on)); err != nil {
		return err
	}
	n.mu.Lock()
	n.readOnly = on
	n.mu.Unlock()
	return nil
}
