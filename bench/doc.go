// Package bench holds rwshard's performance suite (make bench): rwshard
// against go-sql-driver/mysql direct, and GORM on rwshard against GORM
// with gorm.io/plugin/dbresolver, on the project's MariaDB lab. It is a
// module of its own so that GORM and dbresolver never reach the driver
// module's users.
package bench
