package lab

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Lab users. The application user has no SUPER / READ_ONLY ADMIN, as in
// production: a replica rejects its writes with error 1290 instead of
// accepting them and breaking replication. It has the monitoring privileges
// that let rwshard read replication threads (PROCESS, REPLICA MONITOR,
// BINLOG MONITOR). PlainUser is the user production most often gives an
// application: GRANT ALL ON app.* and nothing more.
const (
	AppUser       = "app"
	AppPassword   = "app-secret"
	AppDatabase   = "app"
	PlainUser     = "appdb"
	PlainPassword = "appdb-secret"
	replUser      = "repl"
	replPassword  = "repl"
)

var templateSQL = []string{
	"DELETE FROM mysql.global_priv WHERE User = ''",
	"CREATE USER '" + replUser + "'@'%' IDENTIFIED BY '" + replPassword + "'",
	"GRANT REPLICATION SLAVE ON *.* TO '" + replUser + "'@'%'",
	"CREATE USER '" + AppUser + "'@'%' IDENTIFIED BY '" + AppPassword + "'",
	"GRANT ALL ON `" + AppDatabase + "`.* TO '" + AppUser + "'@'%'",
	"GRANT PROCESS, REPLICA MONITOR, BINLOG MONITOR ON *.* TO '" + AppUser + "'@'%'",
	"CREATE USER '" + PlainUser + "'@'%' IDENTIFIED BY '" + PlainPassword + "'",
	"GRANT ALL ON `" + AppDatabase + "`.* TO '" + PlainUser + "'@'%'",
	"CREATE DATABASE `" + AppDatabase + "`",
	"FLUSH PRIVILEGES",
}

// serverArgs are the options every lab server runs with, after --no-defaults
// and before the per-node ones. Durability is relaxed: the data is thrown
// away.
var serverArgs = []string{
	"--bind-address=127.0.0.1",
	"--skip-name-resolve",
	"--innodb-buffer-pool-size=64M",
	"--innodb-log-file-size=16M",
	"--innodb-flush-log-at-trx-commit=2",
	"--sync-binlog=0",
	"--innodb-buffer-pool-load-at-startup=OFF",
	"--innodb-buffer-pool-dump-at-shutdown=OFF",
	"--performance-schema=OFF",
	"--max-connections=1000",
	"--slave-net-timeout=5",
}

// template returns a data directory initialised with mariadb-install-db and
// the lab's users and database, cached in the temp directory per mariadbd
// version: copying it is much faster than running the installer per node.
func template(ctx context.Context, mariadbd string) (string, error) {
	out, err := exec.CommandContext(ctx, mariadbd, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("lab: %s --version: %w", mariadbd, err)
	}
	sum := sha256.Sum256(append(out, strings.Join(templateSQL, ";")...))
	dir := filepath.Join(os.TempDir(), "rwshard-template-"+hex.EncodeToString(sum[:6]))

	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("lab: template lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lab: template lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if _, err := os.Stat(filepath.Join(dir, "mysql")); err == nil {
		return dir, nil
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := buildTemplate(ctx, mariadbd, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("lab: template: %w", err)
	}
	return dir, nil
}

func buildTemplate(ctx context.Context, mariadbd, dir string) error {
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return ErrNoMariaDB
	}
	args := []string{"--no-defaults", "--datadir=" + dir,
		"--auth-root-authentication-method=normal", "--skip-test-db",
		"--innodb-log-file-size=16M"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.CommandContext(ctx, install, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("lab: mariadb-install-db: %w\n%s", err, out)
	}
	// Start it once without networking or binlog, add users, shut down.
	n := &Node{Name: "template", Dir: dir, mariadbd: mariadbd}
	if err := n.spawn(false, "--skip-networking", "--skip-log-bin"); err != nil {
		return err
	}
	defer n.kill()
	db, err := n.waitReady(ctx, 60*time.Second)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range templateSQL {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("lab: template: %s: %w", q, err)
		}
	}
	return shutdown(db, n)
}

// shutdown stops a server cleanly so its files can be copied.
func shutdown(db *sql.DB, n *Node) error {
	db.Close()
	if err := n.signal(syscall.SIGTERM); err != nil {
		return err
	}
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if !p.wait(60 * time.Second) {
		return fmt.Errorf("lab: %s did not shut down", n.Name)
	}
	return nil
}

// copyDir copies the template tree to dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o660)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
