package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// LookMariadbd returns the path of mariadbd, or an error saying exactly how
// to install it.
func LookMariadbd() (string, error) {
	for _, name := range []string{"mariadbd", "/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoMariaDB
}

// ErrNoMariaDB is returned when mariadbd is not installed.
var ErrNoMariaDB = errors.New("lab: mariadbd not found; install it with `make mariadb` " +
	"(as root it runs: apt-get update && apt-get install -y mariadb-server)")

// spawnReq asks the spawner goroutine to start a process.
type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var spawnCh = make(chan spawnReq)

// spawner starts every lab process from one goroutine locked to one OS
// thread that never exits. Processes are started with Pdeathsig=SIGKILL,
// which the kernel delivers when the creating thread dies: locking the
// thread makes "thread" mean "this process", so a test binary that fails,
// panics or is killed takes its mariadbd children with it.
func init() {
	go func() {
		runtime.LockOSThread()
		for r := range spawnCh {
			r.done <- r.cmd.Start()
		}
	}()
}

// start runs cmd. When detach is false the process dies with this one.
func start(cmd *exec.Cmd, detach bool) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- r
	return <-r.done
}

// alive reports whether pid is a running process: not a zombie, or a
// zombie whose main thread has exited before the others. A killed
// mariadbd's main thread turns zombie first while its other threads are
// still exiting and its sockets still open: until the last one is gone,
// its port may still take connections.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			if i+2 >= len(b) {
				return false
			}
			if b[i+2] != 'Z' && b[i+2] != 'X' {
				return true
			}
			tasks, err := os.ReadDir(filepath.Join("/proc", fmt.Sprint(pid), "task"))
			return err == nil && len(tasks) > 1
		}
	}
	return false
}

// process is a node's running mariadbd, either a child this process
// started (spawn) or one found by pid (Attach): a lab started by `rwshard
// lab up` is injected faults by later rwshard processes, which are not its
// servers' parents. Signals go the same way to both; only a child can be
// waited for, so the exit of one found by pid is seen by polling /proc.
type process struct {
	p      *os.Process
	exited chan struct{} // closed once the child is reaped; nil when not our child
}

// child starts watching a process started by cmd.Start.
func child(cmd *exec.Cmd) *process {
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return &process{p: cmd.Process, exited: exited}
}

// findProcess adopts a running process that this one did not start.
func findProcess(pid int) (*process, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil, err
	}
	return &process{p: p}, nil
}

func (p *process) pid() int { return p.p.Pid }

func (p *process) signal(sig syscall.Signal) error { return p.p.Signal(sig) }

// running reports whether the process has not ended (it may be paused).
func (p *process) running() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	return alive(p.p.Pid)
}

// wait waits up to timeout for the process to end and reports whether it
// did.
func (p *process) wait(timeout time.Duration) bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return true
		case <-time.After(timeout):
			return false
		}
	}
	deadline := time.Now().Add(timeout)
	for p.running() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// release frees what the process handle holds once the process is gone.
// A child's is freed by Wait.
func (p *process) release() {
	if p.exited == nil {
		_ = p.p.Release()
	}
}
