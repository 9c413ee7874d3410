package bench_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// writerEnv, set to a DSN, makes the benchmark binary the writing process
// of BenchmarkUniversal (runWriter) instead of running tests.
const writerEnv = "RWSHARD_BENCH_WRITER"

// BenchmarkUniversal: two processes. The writer, a second process with an
// rwshard handle of its own, inserts a row for each line it reads on its
// stdin and then prints the row's id; this process reads each id from
// that pipe and reads the row at once, from 32 goroutines. One op is one
// such pair. Per consistency mode and replica lag (none; or the replicas
// 1 and 2 seconds behind, MASTER_DELAY) it reports the reads that missed
// their row (stale-reads), the primary's position queries per replica read
// (position-queries/replica-read), the share of reads the replicas served
// (replica-share) and the read latency p50 and p99. Causal is the
// control: the writer's writes are not its scope's.
//
//	go test -run '^$' -bench Universal -benchtime 100000x
func BenchmarkUniversal(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS universal (id BIGINT PRIMARY KEY)", "TRUNCATE universal")
	w := startWriter(b, labDSN(l, ""))
	for _, lag := range []time.Duration{0, time.Second} {
		for _, mode := range []string{"eventual", "causal", "universal"} {
			if lag > 0 && mode == "eventual" {
				continue
			}
			b.Run(fmt.Sprintf("lag=%s/consistency=%s", lagName(lag), mode), func(b *testing.B) {
				ctx := context.Background()
				for i, r := range l.Replicas() {
					if err := l.Lag(ctx, r, lag*time.Duration(i+1)); err != nil {
						b.Fatal(err)
					}
				}
				db, err := sql.Open(rwshard.DriverName, labDSN(l, "rwshard.consistency="+mode))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetMaxIdleConns(64)
				labtest.WaitReady(b, db)
				c, err := rwshard.ConnectorOf(ctx, db)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(1500 * time.Millisecond) // lags measured
				before := c.Stats()
				var stale atomic.Int64
				var mu sync.Mutex
				var lat []time.Duration
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ResetTimer()
				var wg sync.WaitGroup
				for range 32 {
					wg.Go(func() {
						var mine []time.Duration
						for left.Add(-1) >= 0 {
							id, err := w.write()
							if err != nil {
								b.Error(err)
								return
							}
							t0 := time.Now()
							var n int
							err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM universal WHERE id = ?", id).Scan(&n)
							mine = append(mine, time.Since(t0))
							if err != nil {
								b.Error(err)
								return
							}
							if n == 0 {
								stale.Add(1)
							}
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					})
				}
				wg.Wait()
				b.StopTimer()
				after := c.Stats()
				reads := after.Reads - before.Reads
				replicaReads := reads - (after.PrimaryReads - before.PrimaryReads)
				slices.Sort(lat)
				if len(lat) == 0 || reads == 0 {
					return
				}
				b.ReportMetric(float64(stale.Load()), "stale-reads")
				b.ReportMetric(float64(replicaReads)/float64(reads), "replica-share")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "read-p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "read-p99-µs")
				if replicaReads > 0 {
					b.ReportMetric(float64(after.PositionQueries-before.PositionQueries)/float64(replicaReads), "position-queries/replica-read")
				}
			})
		}
	}
	for _, r := range l.Replicas() {
		_ = l.Lag(context.Background(), r, 0)
	}
}

func lagName(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return fmt.Sprintf("%s-%s", d, 2*d)
}

// writer is the writing process, as seen from the reading one: a request
// is a line on its stdin, the answer the id of the row it inserted, a line
// on its stdout. Answers come in any order; each goes to whoever asks
// next (ids is a queue), which is all a reader needs: a row written, and
// acknowledged, before its read begins.
type writer struct {
	mu  sync.Mutex
	in  io.Writer
	ids chan int64
}

func (w *writer) write() (int64, error) {
	w.mu.Lock()
	_, err := io.WriteString(w.in, "w\n")
	w.mu.Unlock()
	if err != nil {
		return 0, err
	}
	id, ok := <-w.ids
	if !ok {
		return 0, fmt.Errorf("the writer process ended")
	}
	return id, nil
}

// startWriter runs this benchmark binary again as the writer on dsn.
func startWriter(b *testing.B, dsn string) *writer {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	w := &writer{in: in, ids: make(chan int64, 64)}
	go func() {
		defer close(w.ids)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			id, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				fmt.Fprintf(os.Stderr, "writer: %s\n", sc.Text())
				return
			}
			w.ids <- id
		}
	}()
	return w
}

// runWriter is the writer process: 32 goroutines take requests from
// stdin, insert a row each through rwshard, and print its id once the
// INSERT is acknowledged.
func runWriter(dsn string) {
	db, err := sql.Open(rwshard.DriverName, dsn)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer db.Close()
	db.SetMaxIdleConns(32)
	reqs := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			reqs <- struct{}{}
		}
		close(reqs)
	}()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var next atomic.Int64
	next.Store(time.Now().UnixNano()) // unique across runs on one table
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range reqs {
				id := next.Add(1)
				if _, err := db.Exec("INSERT INTO universal VALUES (?)", id); err != nil {
					mu.Lock()
					fmt.Fprintln(out, err)
					out.Flush()
					mu.Unlock()
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintln(out, id)
				out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
