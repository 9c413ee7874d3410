package lab

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Node is one mariadbd of the lab.
type Node struct {
	Name     string // "primary", "replica1", … or "ds_0-primary", …
	Group    string // replication group (shard) it belongs to
	ServerID int
	Port     int
	Dir      string // data directory

	mariadbd string
	detach   bool
	args     []string    // Options.ServerArgs
	galera   *galeraNode // nil: not a Galera node

	mu       sync.Mutex
	proc     *process // nil: not running
	readOnly bool
	admin    *sql.DB // root over the unix socket
}

// Addr is the node's TCP address, host:port.
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// DSN is a go-sql-driver/mysql DSN for the application user on this node
// with the given extra parameters (e.g. "parseTime=true"); empty for none.
func (n *Node) DSN(params string) string { return n.UserDSN(AppUser, AppPassword, params) }

// UserDSN is DSN as another user.
func (n *Node) UserDSN(user, password, params string) string {
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s", user, password, n.Addr(), AppDatabase)
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

func (n *Node) socket() string { return filepath.Join(n.Dir, "sock") }

// Admin returns a root connection pool over the node's unix socket, for
// setting up data and injecting faults. Tests of rwshard connect as the
// application user instead (DSN).
func (n *Node) Admin() *sql.DB {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.admin == nil {
		cfg := mysql.NewConfig()
		cfg.User = "root"
		cfg.Net = "unix"
		cfg.Addr = n.socket()
		cfg.Timeout = 5 * time.Second
		cfg.ReadTimeout = 60 * time.Second
		cfg.MultiStatements = true
		c, _ := mysql.NewConnector(cfg)
		n.admin = sql.OpenDB(c)
		n.admin.SetMaxIdleConns(4)
		// Admin connections die with the server on Kill; keep them short.
		n.admin.SetConnMaxLifetime(30 * time.Second)
	}
	return n.admin
}

// Exec runs statements as root on the node.
func (n *Node) Exec(ctx context.Context, query string, args ...any) error {
	if _, err := n.Admin().ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("lab: %s: %s: %w", n.Name, query, err)
	}
	return nil
}

// spawn starts mariadbd for this node with its standard options.
func (n *Node) spawn(detach bool, extra ...string) error {
	args := []string{
		"--no-defaults",
		"--datadir=" + n.Dir,
		"--socket=" + n.socket(),
		"--pid-file=" + filepath.Join(n.Dir, "pid"),
		"--log-error=" + filepath.Join(n.Dir, "error.log"),
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	n.mu.Lock()
	readOnly := n.readOnly
	n.mu.Unlock()
	switch {
	case n.Port > 0 && n.galera != nil:
		args = append(args,
			"--port="+strconv.Itoa(n.Port),
			"--server-id="+strconv.Itoa(n.ServerID),
			"--log-bin=bin", "--binlog-format=ROW", "--log-slave-updates=ON")
		args = append(args, serverArgs...)
		args = append(args, n.galera.args(n)...)
		args = append(args, n.args...)
	case n.Port > 0:
		args = append(args,
			"--port="+strconv.Itoa(n.Port),
			"--server-id="+strconv.Itoa(n.ServerID),
			"--log-bin=bin", "--binlog-format=ROW", "--log-slave-updates=ON",
			"--gtid-strict-mode=ON",
			"--read-only="+onOff(readOnly))
		args = append(args, serverArgs...)
		args = append(args, n.args...)
	}
	args = append(args, extra...)
	if n.mariadbd == "" { // an attached lab looks it up only to restart a node
		p, err := LookMariadbd()
		if err != nil {
			return err
		}
		n.mariadbd = p
	}
	cmd := exec.Command(n.mariadbd, args...)
	if n.galera != nil {
		// The lab's own state transfer script (see Lab.Donor) is found
		// on the server's PATH.
		cmd.Env = append(os.Environ(), "PATH="+n.galera.binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if err := start(cmd, detach); err != nil {
		return fmt.Errorf("lab: start %s: %w", n.Name, err)
	}
	p := child(cmd)
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	return nil
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// waitReady polls the socket until the server answers, the process exits or
// the timeout passes.
func (n *Node) waitReady(ctx context.Context, timeout time.Duration) (*sql.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	db := n.Admin()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return db, nil
		}
		if !n.Running() {
			return nil, fmt.Errorf("lab: %s exited during start-up:\n%s", n.Name, n.logTail())
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lab: %s not ready after %s: %w\n%s", n.Name, timeout, err, n.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logSize is the length of the node's error log so far (0: none yet).
func (n *Node) logSize() int64 {
	fi, err := os.Stat(filepath.Join(n.Dir, "error.log"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// portTakenSince reports whether the node's error log, after its first
// from bytes, says mariadbd could not bind its TCP port because another
// process holds it (errno 98, EADDRINUSE).
func (n *Node) portTakenSince(from int64) bool {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	if int64(len(b)) < from {
		from = 0
	}
	return bytes.Contains(b[from:], []byte("Bind on TCP/IP port. Got error: 98"))
}

// logTail returns the end of the node's error log, for start-up failures.
func (n *Node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// signal sends sig to the node's process.
func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || !p.running() {
		return fmt.Errorf("lab: %s is not running", n.Name)
	}
	if err := p.signal(sig); err != nil {
		return fmt.Errorf("lab: signal %v to %s (pid %d): %w", sig, n.Name, p.pid(), err)
	}
	return nil
}

// kill stops the process with SIGKILL (after SIGCONT, in case it was
// paused) and waits for it to be gone.
func (n *Node) kill() error {
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	admin := n.admin
	n.admin = nil
	n.mu.Unlock()
	if admin != nil {
		admin.Close()
	}
	if p == nil {
		return nil
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGKILL)
	if !p.wait(30 * time.Second) {
		return fmt.Errorf("lab: %s (pid %d) did not die after SIGKILL", n.Name, p.pid())
	}
	p.release()
	return nil
}

// Running reports whether the node's process is up (it may be paused).
func (n *Node) Running() bool {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	return p != nil && p.running()
}

// pid is the node's process id, or 0 when it is not running.
func (n *Node) pid() int {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || !p.running() {
		return 0
	}
	return p.pid()
}

// pickPort chooses a new node's port: freePort, but for tests.
var pickPort = freePort

// freePort finds a free loopback port below the kernel's ephemeral range
// (ip_local_port_range): a port the kernel hands out for outgoing
// connections could be taken by one of them — the tests make thousands —
// between this check and mariadbd's bind, or while a killed node is down
// before its restart. Ports of other labs starting at the same moment are
// the remaining risk, small in a range of thousands chosen at random but
// seen once in CI: startNew starts such a node again on another port.
func freePort() (int, error) {
	low := ephemeralLow()
	const base = 10000
	for range 200 {
		if low <= base+1000 {
			break // no room below the range: let the kernel choose
		}
		p := base + rand.IntN(low-base)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			l.Close()
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= 0 {
		return 32768
	}
	return low
}
