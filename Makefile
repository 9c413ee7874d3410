# One command per job; each does its own set-up.
GO ?= go

.PHONY: test demo mariadb check bench fuzz

# Everything CI runs: formatting, vet, and every test with the race detector,
# integration tests included (RWSHARD_LAB=require: a lab that cannot start
# fails the run instead of skipping).
test: mariadb check
	RWSHARD_LAB=require $(GO) test -race -count=1 -timeout 15m ./...

# Starts a local replication lab and shows rwshard at work.
demo: mariadb
	$(GO) run ./examples/quickstart

# Installs Debian's mariadb-server if mariadbd is missing (needs root).
mariadb:
	./scripts/install-mariadb

check:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed on: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# Benchmarks against the lab: rwshard vs go-sql-driver/mysql direct.
bench: mariadb
	RWSHARD_LAB=require $(GO) test -run '^$$' -bench . -benchtime 2s -count 6 . | tee bench.txt
