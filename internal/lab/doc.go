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
//
// Galera (Options.Galera, predefined as Galera) starts a three-node Galera
// cluster instead, with Debian's galera-4 provider (GaleraProvider): nodes
// "node1", "node2", "node3", each with its own client port and its own
// ports for group communication (gmcast.listen_addr, which also sets the
// base port), IST and SST. node1 bootstraps the cluster (gcomm://) from the
// cached data directory; the others start empty and join it one after the
// other by rsync state transfer (wsrep_sst_method=rsync; the node
// directories are open to the rsync daemon, which runs as nobody when the
// lab runs as root). Group communication timeouts are seconds, not the
// production default, so that a killed node leaves the view quickly. GTIDs
// are on (wsrep_gtid_mode, one domain for the cluster's writes) and every
// node has a binlog, so that a GTID learned on one node means the same
// on the others. Faults for Galera: Kill/Restart (Restart runs mariadbd
// --wsrep-recover first, as mysqld_safe does, so that the node catches up
// by IST), Desync (SET GLOBAL wsrep_desync: wsrep_local_state 2,
// Donor/Desynced), Isolate (gmcast.isolate=1: the node alone is
// non-Primary and answers 1047, the other two go on as the Primary
// component), Donor (a real SST donor, held: a joiner is killed, loses its
// saved state and asks the donor for a snapshot by the lab's method,
// rsync whose donor side waits until the test releases it) and Pause.
// Node.Wsrep reads a node's Galera state; WaitSynced waits for Synced.
// Sync does nothing for a Galera group (replication is synchronous).
//
// NodeByServerID maps @@server_id to a node name, to tell where a statement
// ran.
package lab
