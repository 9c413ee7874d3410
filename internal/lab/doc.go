// Package lab starts real MariaDB replication on loopback for rwshard's
// tests, CLI and examples.
//
// Start copies a data directory prepared once with mariadb-install-db (and
// cached in the temp directory), starts one mariadbd per node on free ports
// with GTID binlogs, and wires each replica to its primary with
// MASTER_USE_GTID=slave_pos. Two topologies are predefined: RW (primary,
// replica1, replica2) and Sharded (groups ds_0 and ds_1, one replica each).
//
// Servers run as children started with Pdeathsig=SIGKILL: when the process
// that started them ends, however it ends, they end too (unless
// Options.Detach). Stop kills them and removes the lab directory; Reap kills
// leftovers of detached labs, ReapIn only those under one directory. A
// detached lab is handed to another process with Save and Load; State.Stop
// ends it there (the CLI's `rwshard lab up` and `lab down`), and Attach
// rebuilds it there so that the faults below act on its servers by pid
// (`rwshard lab fault`).
//
// Tests connect as the application user (AppUser), who has no SUPER or
// READ_ONLY ADMIN: a replica rejects its writes with error 1290, as in
// production. Node.Admin gives a root connection for set-up and faults.
//
// Faults: Lag (MASTER_DELAY), StopReplication, StopSQLThread,
// StartReplication, Pause/Resume (SIGSTOP/SIGCONT), Kill/Restart,
// Switchover, and NewBlackhole (a TCP listener that never answers).
// NodeByServerID maps @@server_id to a node name, to tell where a statement
// ran.
package lab
