package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
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

// alive reports whether pid is a running (not zombie) process.
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
			return i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
		}
	}
	return false
}
