// Package shard is rwshard's client-side sharding: the rules (which data
// sources exist, how logical tables map to physical tables), the
// algorithms that place rows, key generation, routing and the merge of
// multi-shard results.
//
// # Sharding rules
//
// A sharding setup is a [Config]: filled in by code, or read from a YAML
// file by [ParseYAML] or [LoadRules]. [Config.Build] validates it and
// resolves it into immutable [Rules]; custom Go algorithms are passed to
// Build by name. Every problem is a [*rwshard.ConfigError] that names the
// key at fault (tables.t_order.tableStrategy.algorithm) and, for a file,
// the file and line; nothing unsupported is silently ignored.
//
// Names: logical table names and column names are matched without regard
// to case (Build lower-cases them, as ShardingSphere does; MySQL compares
// column names case-insensitively). Physical table names in data nodes are
// used as written: with lower_case_table_names=0, the Linux default and the
// rwshard lab's setting, MySQL and MariaDB table names are case-sensitive.
//
// # rwshard's YAML
//
// The fields of Config in lowerCamelCase (testdata/rules/native.yaml is
// this example with comments):
//
//	dataSources:                       # name → a primary and its replicas (go-sql-driver DSNs)
//	  ds_0:
//	    primary: "app:pw@tcp(10.0.0.1:3306)/shop_0?parseTime=true"
//	    replicas:
//	      - "app:pw@tcp(10.0.0.2:3306)/shop_0?parseTime=true"
//	      - "app:pw@tcp(10.0.0.3:3306)/shop_0?parseTime=true"
//	    balance: weighted              # round_robin, random, weighted, least_in_flight, latency
//	    weights: [2, 1]                # one per replica
//	  ds_1:
//	    primary: "app:pw@tcp(10.0.1.1:3306)/shop_1?parseTime=true"
//	    replicas: ["app:pw@tcp(10.0.1.2:3306)/shop_1?parseTime=true"]
//	defaultDataSource: ds_0            # unsharded, non-broadcast tables live here
//	tables:
//	  t_order:
//	    dataNodes: ds_${0..1}.t_order_${0..1}      # inline expression or "ds_0.t_a, ds_1.t_b"
//	    tableStrategy: {column: order_id, algorithm: t_order_inline}
//	    keyGenerator: {column: order_id, generator: snowflake}
//	  t_order_item:
//	    dataNodes: ds_${0..1}.t_order_item_${0..1}
//	    tableStrategy: {column: order_id, algorithm: t_order_item_inline}
//	  t_user:
//	    dataNodes: ds_0.t_user, ds_1.t_user
//	    databaseStrategy: {column: user_id, algorithm: user_hash}
//	defaultDatabaseStrategy: {column: user_id, algorithm: db_mod}
//	defaultTableStrategy: null         # a table opts out of a default with {none: true}
//	bindingTables:
//	  - [t_order, t_order_item]        # or "t_order, t_order_item"
//	broadcastTables: [t_config, t_region]
//	algorithms:                        # name → type and ShardingSphere 5.x props
//	  db_mod: {type: MOD, props: {sharding-count: 2}}
//	  t_order_inline: {type: INLINE, props: {algorithm-expression: "t_order_${order_id % 2}"}}
//	  t_order_item_inline: {type: INLINE, props: {algorithm-expression: "t_order_item_${order_id % 2}"}}
//	  user_hash: {type: HASH_MOD, props: {sharding-count: 2}}
//	keyGenerators:
//	  snowflake: {type: SNOWFLAKE, props: {worker-id: 1}}
//	maxBroadcastShards: 8              # bound on a read without a shard key; 0: none
//	refuseBroadcastReads: false        # true: such a read is an error
//	allowBroadcastWrites: false        # true: a write without shard key runs on every data node, in one transaction
//	routeLog: false                    # ask the driver to log routing decisions
//
// # ShardingSphere-JDBC YAML
//
// A ShardingSphere-JDBC 5.x file (top-level rules, mode, props,
// databaseName or schemaName, or data sources with jdbcUrl) is read as
// such, so a Java service and a Go service can share one file
// (testdata/rules/shardingsphere-5.2.yaml and shardingsphere-5.4.yaml).
//
// HASH_MOD: in ShardingSphere, HASH_MOD is the absolute value of Java's
// hashCode() modulo the count; rwshard's own HASH_MOD is xxhash64. A
// ShardingSphere file's HASH_MOD is therefore read as SS_HASH_MOD, the
// Java-compatible algorithm, so rows are found where ShardingSphere put
// them. Write SS_HASH_MOD, not HASH_MOD, when moving such a rule to
// rwshard's dialect.
//
// Supported, and what each becomes:
//
//   - dataSources: jdbcUrl (or url), username, password,
//     dataSourceProperties (JDBC properties, read like URL parameters);
//     each becomes a data source with a go-sql-driver/mysql DSN (below).
//   - !SHARDING: tables (actualDataNodes; databaseStrategy/tableStrategy
//     with standard {shardingColumn, shardingAlgorithmName} or none;
//     keyGenerateStrategy {column, keyGeneratorName}), bindingTables
//     ("t_order,t_order_item", "name:t_order,t_order_item" or lists),
//     broadcastTables, defaultDatabaseStrategy, defaultTableStrategy,
//     defaultShardingColumn (the column of a standard strategy that names
//     none), defaultKeyGenerateStrategy (for tables without their own),
//     shardingAlgorithms, keyGenerators. A table without actualDataNodes
//     is the logical table in every data source: read/write splitting
//     groups first, then the other data sources, in file order.
//   - !READWRITE_SPLITTING: groups under dataSources (5.0–5.4.0) or
//     dataSourceGroups (5.4.1+), as writeDataSourceName +
//     readDataSourceNames (5.0, 5.4+), staticStrategy (5.2–5.3) or type
//     Static + props (5.1); loadBalancerName; transactionalReadQueryStrategy
//     PRIMARY. Each group becomes one data source named after the group:
//     the write data source's DSN is the primary, the read data sources'
//     DSNs the replicas; data nodes name the groups, and the member data
//     sources are no longer data sources of their own. Load balancers:
//     ROUND_ROBIN → round_robin (also without a load balancer, as in
//     ShardingSphere), RANDOM → random, WEIGHT → weighted with the props
//     giving each read data source's weight (every one needs one; a weight
//     naming no read data source of a group using it is an error).
//   - !BROADCAST (5.4+): tables.
//   - !SINGLE (5.4+): defaultDataSource becomes the default data source;
//     tables may only list it (ds.* or ds.table) or wildcards (*.*):
//     rwshard keeps every unsharded table in that one data source.
//   - props: sql-show becomes Config.RouteLog.
//
// Accepted without effect, with the reason:
//
//   - databaseName, schemaName: ShardingSphere's logical database name,
//     seen by Java code in metadata; Go code names tables only.
//   - mode with type Standalone (or 5.1's Memory), its repository and
//     overwrite: rwshard reads its rules from this file only and persists
//     nothing. (A Standalone ShardingSphere with overwrite: false may run
//     on rules from its repository instead of the file; rwshard uses the
//     file.)
//   - data source keys dataSourceClassName, type, driverClassName,
//     poolName: Java classes and names; rwshard pools with database/sql
//     and connects with go-sql-driver/mysql. Pool settings
//     maximumPoolSize, minimumIdle, maxLifetime, idleTimeout,
//     connectionTimeout, keepaliveTime, validationTimeout,
//     connectionTestQuery: rwshard's pools are configured by the driver
//     Config (rwshard.maxOpenConns, rwshard.maxIdleConns,
//     rwshard.connMaxLifetime, rwshard.connMaxIdleTime) and its nodes
//     checked by its health probes.
//   - props sql-simple (log format), kernel-executor-size and
//     max-connections-size-per-query (executor tuning; rwshard bounds its
//     own fan-out), check-table-metadata-enabled (rwshard loads no table
//     metadata), sql-federation-enabled: false, sql-federation-type: NONE.
//   - !TRANSACTION with defaultType LOCAL (one local transaction per data
//     source is what rwshard does); its providerType names an XA manager,
//     unused with LOCAL.
//
// Refused with an error naming the key: every other rule (!ENCRYPT,
// !SHADOW, !MASK, !DB_DISCOVERY, …), autoTables, complex and hint
// strategies, audits, scaling, the sharding cache, dynamic read/write
// splitting (rwshard follows switchovers among the listed data sources
// itself), transactional reads on replicas (FIXED, DYNAMIC), load
// balancers other than the three above, Cluster mode, SQL federation,
// unknown props, unknown data source keys (autoCommit, readOnly, … change
// behaviour and are not carried over), and any algorithm or key generator
// property the type does not know. Algorithm types are those of
// [NewAlgorithm]; CLASS_BASED names a Java class and is accepted only when
// Build is given a Go algorithm of the same name.
//
// # jdbcUrl
//
// jdbc:mysql://host:port/db?params or jdbc:mariadb://…, one host (an empty
// host is localhost, the port defaults to 3306, IPv6 in brackets), user
// info in the URL or user/password parameters if the YAML has no
// username/password, becomes user:password@tcp(host:port)/db?params in
// go-sql-driver's canonical form (FormatDSN). Several hosts, and the
// replication, loadbalance, failover, sequential and +srv forms, are
// errors: declare one data source per host and group them with
// !READWRITE_SPLITTING. Parameters (names matched without regard to case,
// values %-decoded as Connector/J does):
//
//	serverTimezone, connectionTimeZone  loc: an IANA name; UTC/GMT (the default,
//	                                    written as nothing); LOCAL → Local; a whole-hour
//	                                    offset GMT+8 (GMT%2B8) → Etc/GMT-8
//	useSSL=false                        tls=false
//	useSSL=true                         tls=true (verifies chain and host name; stricter
//	                                    than Connector/J, which does not verify by default)
//	  + verifyServerCertificate=false   tls=skip-verify
//	  + trustServerCertificate=true     tls=skip-verify (MariaDB)
//	sslMode DISABLED/PREFERRED/REQUIRED tls=false / preferred / skip-verify
//	  VERIFY_CA, VERIFY_IDENTITY        tls=true (MariaDB: disable, trust, verify-ca, verify-full)
//	characterEncoding=utf8|UTF-8        charset=utf8mb4
//	useUnicode=true                     nothing (go-sql-driver always speaks Unicode)
//	allowPublicKeyRetrieval             nothing: go-sql-driver requests the server's RSA key
//	                                    when caching_sha2_password needs it without TLS, which
//	                                    is what true allows; false cannot be enforced (pin a key
//	                                    with mysql.RegisterServerPubKey and serverPubKey).
//	                                    allowCleartextPasswords is not its equivalent: that
//	                                    sends the password unencrypted to a clear-text plugin.
//	connectTimeout=ms                   timeout
//	socketTimeout=ms                    readTimeout
//	allowMultiQueries=true              multiStatements=true
//
// Any other parameter is an error naming the data source and the
// parameter: go-sql-driver would send an unknown parameter to the server
// as a system variable, and dropping one would change behaviour silently.
// Without useSSL or sslMode the DSN has no tls parameter: go-sql-driver's
// default is no TLS, where Connector/J 8 prefers TLS.
package shard
