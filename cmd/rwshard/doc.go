// Command rwshard checks an rwshard configuration against the servers it
// names, explains where a statement would run, shows replica lag live, and
// runs a local MariaDB replication lab.
//
//	rwshard check CONFIG|DSN                      # connectivity, roles, replication, settings
//	rwshard explain CONFIG "SQL" [ARG...]         # where a statement would run, and why
//	rwshard lag CONFIG [-interval 1s] [-count N]  # live health and lag table
//	rwshard lab up [-topology rw|sharded]         # start a detached local lab
//	rwshard lab status | lab down                 # inspect it, stop it
//
// CONFIG is an rwshard DSN or a file whose first line that is neither blank
// nor a # comment is one, or a sharding rules file (.yaml). Passwords are
// never printed: the DSN is shown with *** in their place.
//
// check connects to every node directly with go-sql-driver/mysql, each
// connection bounded by rwshard.connectTimeout (dial and handshake), and
// reports per node reachability, version, role, @@read_only, the
// replication threads and Seconds_Behind_Master, and @@wait_timeout
// against rwshard.connMaxLifetime. explain and lag open rwshard itself
// with health probes on, so they show what the router sees.
//
// Exit status: 0 ok, 1 problems found, 2 usage error.
package main
