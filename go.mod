module github.com/rwshard/rwshard

go 1.25.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/go-sql-driver/mysql v1.10.1
	github.com/stretchr/testify v1.12.1
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
