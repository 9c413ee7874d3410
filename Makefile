# One command per job; each does its own set-up.
GO ?= go

# Every module of the repository: the driver first, then the modules built
# on it (sharding, metrics, the CLI, examples, benchmarks, and the tests
# that need third-party libraries).
MODULES := . shard metrics otel cmd/rwshard examples bench bench/tpcc tests

.PHONY: test demo mariadb check bench bench-tpcc fuzz

# Everything CI runs: formatting, vet, and every test with the race detector,
# integration tests included (RWSHARD_LAB=require: a lab that cannot start
# fails the run instead of skipping).
test: mariadb check
	@set -e; for m in $(MODULES); do \
		echo "== go test $$m"; \
		(cd $$m && RWSHARD_LAB=require $(GO) test -race -count=1 -timeout 15m ./...); \
	done

# Shows rwshard at work: every example, each run as a user runs it with
# their own cluster's DSN, against labs that scripts/demo starts (a
# replication lab, then a sharded one) and stops on exit.
demo: mariadb
	GO=$(GO) ./scripts/demo

# Installs Debian's mariadb-server and galera-4 if missing (needs root).
mariadb:
	./scripts/install-mariadb

check:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed on: $$unformatted"; exit 1; fi
	@set -e; for m in $(MODULES); do echo "== go vet $$m"; (cd $$m && $(GO) vet ./...); done
	@# The driver module's go directive is the oldest supported Go release:
	@# it must build there (the go command fetches that toolchain), alone,
	@# as a user's build meets it (go.work asks for a newer Go).
	GOWORK=off GOTOOLCHAIN=go1.25.0 $(GO) build ./...

# The performance suite against the lab (docs/performance.md): every
# benchmark COUNT times (default 6), each run a fresh process and lab so
# that the sides of a comparison interleave, then benchstat with
# go-sql-driver/mysql direct and rwshard side by side. Writes bench.txt
# (raw) and bench-summary.txt. COUNT, BENCHTIME (1s) and BENCH (regexp)
# can be set: make bench COUNT=10 BENCH=PointSelect
# Then the workloads (bench-tpcc): TPC-C and a read-only mix, rwshard
# against go-sql-driver direct in interleaved pairs (bench/tpcc/README.md);
# TPCC=0 leaves them out.
bench: mariadb
	GO=$(GO) COUNT=$(or $(COUNT),6) BENCHTIME=$(or $(BENCHTIME),1s) BENCH='$(or $(BENCH),.)' ./scripts/bench
	@if [ "$(TPCC)" != 0 ]; then $(MAKE) --no-print-directory bench-tpcc; fi

bench-tpcc: mariadb
	cd bench/tpcc && RWSHARD_LAB=require $(GO) test -tags tpcc -count=1 -run 'TestTPCC|TestReadHeavy' -v -timeout 60m .
