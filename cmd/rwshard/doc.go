// Command rwshard checks an rwshard configuration against the servers it
// names, explains where a statement would run, shows replica lag live, and
// runs a local MariaDB replication lab.
//
//	rwshard check [-json] CONFIG|DSN               # connectivity, roles, replication, settings
//	rwshard explain [-json] CONFIG "SQL" [ARG...]  # where a statement would run, and why
//	rwshard lag [-json] CONFIG [-interval 1s] [-count N]  # live health, lag and reasons
//	rwshard lab up [-topology rw|sharded]          # start a detached local lab
//	rwshard lab status | lab down                  # inspect it, stop it
//	rwshard version [-json]                        # module version, VCS revision, Go version
//
// CONFIG is an rwshard DSN or a file whose first line that is neither blank
// nor a # comment is one, or a sharding rules file (.yaml). Passwords are
// never printed: the DSN is shown with *** in their place.
//
// A CONFIG without a password takes it from the environment variable
// RWSHARD_PASSWORD, else from the [client] section of a MySQL option file:
// the one given by -defaults-file FILE (which must exist), else ~/.my.cnf
// if there is one. The option file's user fills a CONFIG without a user.
// The file is read as the mysql client reads it, as far as password and
// user go: [section] headers, key = value, # and ; comment lines, a #
// outside quotes ending a value, values in single or double quotes. The
// data sources of a sharding rules file are left as they are.
//
// Flags go anywhere after the command, as -flag or --flag; "--" ends them,
// and an argument that is a number ("-5", "-1.5") is never taken for a
// flag, so explain's negative ARGs need no "--". explain counts the ?
// placeholders of SQL outside string literals, quoted identifiers and
// comments, and refuses a number of ARGs that differs.
//
// check connects to every node directly with go-sql-driver/mysql, each
// connection bounded by rwshard.connectTimeout (dial and handshake), and
// reports per node reachability, version, role, @@read_only, the
// replication threads and Seconds_Behind_Master, and @@wait_timeout
// against rwshard.connMaxLifetime. explain and lag open rwshard itself
// with health probes on, so they show what the router sees; lag's REASON
// column says why a node is out of rotation or fenced, from
// Connector.Health.
//
// With -json, check prints one JSON document (every group, its nodes,
// problems and warnings), explain the plan as JSON with string literals
// redacted, and lag one JSON object per refresh (NDJSON); the exit status
// is the same as without.
//
// A usage error prints three lines to stderr: the message, the command's
// synopsis, and "run 'rwshard help COMMAND' for details"; rwshard help
// COMMAND and COMMAND -h print the full text.
//
// Exit status: 0 ok, 1 problems found, 2 usage error.
package main
