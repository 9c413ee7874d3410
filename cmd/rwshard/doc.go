// Command rwshard checks an rwshard configuration against the servers it
// names, explains where a statement would run, shows replica lag live,
// lists which programs run which rwshard version and rules, and runs a
// local MariaDB replication lab.
//
//	rwshard check [-json] CONFIG|DSN               # rules proof, connectivity, roles, replication, settings, data nodes
//	rwshard explain [-json] CONFIG "SQL" [ARG...]  # where a statement would run, and why
//	rwshard fleet [-json] CONFIG                   # programs × rwshard version × rules, with connection counts
//	rwshard lag [-json] CONFIG [-interval 1s] [-count N]  # live health, lag and reasons
//	rwshard lab up [-topology rw|sharded|galera]   # start a detached local lab (sharded: and its rules files)
//	rwshard lab status [-dsn|-rules] | lab down    # inspect it, stop it
//	rwshard lab fault KIND [NODE [SECONDS]]        # kill, restart, pause, lag, switchover, desync a node…
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
// against rwshard.connMaxLifetime. With a sharding rules file it first
// proves the rules without a server, as sql.Open does
// (shard.Config.Check): every target each strategy's algorithm can pick
// for a key of the right type is one of the table's data nodes, and
// binding tables are laid out alike. It lists every problem, where
// sql.Open stops at the first, and the strategies it cannot prove (custom
// algorithms, INLINE expressions that name a target per key); rules that
// do not build stop check there. Then it checks every data source's
// group, and its data nodes on its primary, in the
// database of its DSN, with one query on information_schema.TABLES and
// one on information_schema.COLUMNS per data source: every physical table
// the rules place there (the expanded dataNodes of each sharded table, and
// every broadcast table on every data source) must exist and hold the
// table's database and table sharding columns and its key generator
// column, of one kind of type (integer, number, string, binary, time) in
// every physical table of a logical table and of the tables bound to it.
// Table names are compared as the server does (lower_case_table_names).
// Each missing table or column, and each column of another kind, is a
// problem naming the data source, the physical and the logical table (and
// the column); a data source that answers but holds none of the tables the
// rules place there is one problem, naming it as such: its DSN points at
// the wrong server or database, which SELECT 1 does not show.
//
// lab up -topology sharded writes, into the lab directory, sharding rules
// for the lab in rwshard's YAML (rules.yaml) and in ShardingSphere-JDBC
// 5.x's (rules-shardingsphere.yaml): t_order and t_order_item bound, in
// ds_${0..1}.t_…_${0..1} by user_id then order_id (MOD), order_id from a
// snowflake generator, t_dict broadcast. It creates those tables on both
// data sources and prints the files' paths, "rwshard check FILE" and the
// DSN /?rwshard.rulesFile=FILE (URL-escaped); lab status shows them
// (-rules: their paths only) and lab down removes them with the lab
// directory.
//
// lab fault injects one fault into the recorded lab, from another process
// than lab up's: it attaches to the servers by pid and runs the lab's own
// fault functions (those rwshard's tests use). lag NODE SECONDS sets
// MASTER_DELAY (0 removes it); stop-replication and start-replication stop
// and start a replica's threads; kill (SIGKILL), restart, pause (SIGSTOP)
// and resume (SIGCONT) act on the server's process; switchover NODE makes
// a replica its group's primary; blackhole listens on 127.0.0.1, accepts
// and never answers, until interrupted or -for passes. kill, restart and
// switchover rewrite the state file (pids, primary) so that lab status and
// lab down stay right. A wrong KIND, NODE or SECONDS is a usage error that
// lists the valid ones; a fault that fails exits 1.
//
// explain and lag open rwshard itself
// with health probes on, so they show what the router sees; lag's REASON
// column says why a node is out of rotation or fenced, from
// Connector.Health.
//
// With -json, check prints one JSON document (every group, its nodes,
// problems and warnings, and with a rules file the rules' proof and each
// group's data_nodes), explain the plan as JSON with string literals
// redacted, and lag one JSON object per refresh (NDJSON); the exit status
// is the same as without.
//
// A usage error prints three lines to stderr: the message, the command's
// synopsis, and "run 'rwshard help COMMAND' for details"; rwshard help
// COMMAND and COMMAND -h print the full text.
//
// Exit status: 0 ok, 1 problems found, 2 usage error.
package main
