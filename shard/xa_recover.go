package shard

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rwshard/rwshard/hint"
)

// Recovery of XA transactions that a crash (of the process or of a shard)
// left prepared. Any connector with the rules can do it, from what the
// databases hold: the branches XA RECOVER lists on each data source's
// primary, and the decision rows (xa_decision.go).
//
// A transaction is resolved once its decision is final. Its decision
// branch prepared before any other, so while any branch is prepared the
// decision branch is prepared, committed or rolled back:
//
//   - recovery first rolls the decision branch back; the server lets it
//     only when no session holds the branch, so its coordinator has died
//     or lost that connection. If that succeeds, the transaction is
//     rolled back;
//   - if the server does not have the branch (XAER_NOTA), either a live
//     session holds it — XA RECOVER still lists it: leave the
//     transaction to its coordinator — or it is committed or rolled
//     back, and the decision row, read on the primary, says which.
//
// Then every other prepared branch is committed or rolled back to match.
// The bound only keeps recovery away from transactions in flight: a
// transaction is touched once its gtrid is older than the bound and this
// instance saw it prepared on its previous pass, one bound earlier. The
// decision rule, not the bound, is what keeps every branch of a
// transaction to one outcome.

// xaSweepAge is how old a decision row must be for a pass to delete it
// when no branch of its transaction is prepared: rows of transactions
// whose coordinator stopped between the last commit and the delete.
const xaSweepAge = time.Hour

// xaRecovery resolves prepared branches for one connector.
type xaRecovery struct {
	c        *connector
	bound    time.Duration
	sweepAge time.Duration
	log      *slog.Logger
	now      func() time.Time
	prev     map[string]bool // gtrids listed prepared on the previous pass
}

func newXARecovery(c *connector, bound time.Duration) *xaRecovery {
	log := c.base.Logger
	if log == nil {
		log = slog.Default()
	}
	return &xaRecovery{c: c, bound: bound, sweepAge: xaSweepAge, log: log, now: time.Now}
}

// startXARecovery starts the recovery loop of a connector with XA on and
// a recovery interval, owned by the connector: Close stops and joins it.
func (c *connector) startXARecovery() {
	if !c.base.Sharding.XA || c.base.Sharding.XARecoverInterval <= 0 {
		return
	}
	r := newXARecovery(c, c.base.Sharding.XARecoverInterval)
	c.retired.Go(func() { r.loop(c.stop) })
}

// loop runs a pass at once, then one per bound, until stop is closed.
func (r *xaRecovery) loop(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // Close ends a pass in flight
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(r.bound)
	defer t.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, r.bound)
		r.pass(pctx)
		pcancel()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// xaPass counts what one pass did.
type xaPass struct {
	Committed, RolledBack int // branches resolved
	Waiting               int // branches younger than the bound, or first seen
	Held                  int // branches whose decision branch a live session holds
	Failed                int // branches left after an error
	Deleted               int // decision rows deleted
}

// xaBranch is a branch listed by XA RECOVER.
type xaBranch struct {
	formatID     int64
	gtrid, bqual string
}

// sql is the branch's XA id as SQL, exactly the bytes listed.
func (b xaBranch) sql() string {
	return "X'" + hex.EncodeToString([]byte(b.gtrid)) + "',X'" + hex.EncodeToString([]byte(b.bqual)) + "'," + strconv.FormatInt(b.formatID, 10)
}

// pass lists the prepared branches of every data source, resolves those
// whose time has come, and deletes the decision rows no longer needed.
func (r *xaRecovery) pass(ctx context.Context) xaPass {
	var p xaPass
	st := r.c.acquire()
	defer st.release()
	names := slices.Sorted(maps.Keys(st.sources))
	nm := newXANames(names)
	conns := map[string]driver.Conn{}
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	connOf := func(ds string) (driver.Conn, error) {
		if cn := conns[ds]; cn != nil {
			return cn, nil
		}
		cn, err := st.sources[ds].Connect(ctx)
		if err != nil {
			return nil, err
		}
		conns[ds] = cn
		return cn, nil
	}

	// The rwshard branches of every data source, by gtrid. A server that
	// holds several data sources lists all their branches: each is
	// taken where its bqual says it belongs.
	prepared := map[string][]string{} // gtrid → data sources of its prepared branches
	complete := true
	for _, ds := range names {
		cn, err := connOf(ds)
		var bs []xaBranch
		if err == nil {
			bs, err = listXA(ctx, cn)
		}
		if err != nil {
			complete = false
			r.log.Warn("shard: XA recovery: XA RECOVER failed", "dataSource", ds, "err", err)
			continue
		}
		for _, b := range bs {
			if _, ok := parseGTRID(b.gtrid); ok && b.formatID == 1 && nm.branch[b.bqual] == ds {
				prepared[b.gtrid] = append(prepared[b.gtrid], ds)
			}
		}
	}

	now := r.now()
	seen := make(map[string]bool, len(prepared))
	for _, gt := range slices.Sorted(maps.Keys(prepared)) {
		seen[gt] = true
		g, _ := parseGTRID(gt)
		if !xaRipe(now.Sub(g.started), r.prev[gt], r.bound) {
			p.Waiting += len(prepared[gt])
			continue
		}
		r.resolve(ctx, &p, nm, connOf, gt, g, prepared[gt])
	}
	r.prev = seen

	// Decision rows: those of this connector's finished transactions, and
	// old ones no prepared branch needs, when every data source answered.
	done := r.c.xa.take()
	for _, ds := range names {
		gtrids := done[ds]
		if complete {
			if cn, err := connOf(ds); err == nil {
				old, err := oldDecisions(ctx, cn, r.sweepAge)
				if err != nil {
					r.log.Warn("shard: XA recovery: reading old decisions failed", "dataSource", ds, "err", err)
				}
				for _, gt := range old {
					if prepared[gt] == nil && !slices.Contains(gtrids, gt) {
						gtrids = append(gtrids, gt)
					}
				}
			}
		}
		if len(gtrids) == 0 {
			continue
		}
		cn, err := connOf(ds)
		if err == nil {
			_, err = execOn(ctx, cn, deleteDecisions(gtrids))
		}
		if err != nil {
			r.c.xa.putBack(ds, done[ds])
			continue
		}
		p.Deleted += len(gtrids)
	}
	return p
}

// xaRipe reports whether recovery may resolve a transaction whose gtrid
// is age old: older than the bound, and already prepared on the previous
// pass (a bound ago), so that neither a coordinator's clock ahead of this
// one nor a restart makes a transaction in flight look old.
func xaRipe(age time.Duration, seenBefore bool, bound time.Duration) bool {
	return seenBefore && age >= bound
}

// resolve makes the decision of transaction gt final and brings its
// prepared branches (on data sources dss) to it.
func (r *xaRecovery) resolve(ctx context.Context, p *xaPass, nm xaNames, connOf func(string) (driver.Conn, error), gt string, g gtrid, dss []string) {
	d, ok := nm.decision[g.decision]
	if !ok {
		p.Failed += len(dss)
		r.log.Warn("shard: XA recovery: the decision data source of a prepared transaction is not in the rules",
			"xid", gt, "decision", g.decision, "dataSources", dss)
		return
	}
	commit, err := r.decide(ctx, connOf, gt, d)
	switch {
	case errors.Is(err, errXAHeld):
		p.Held += len(dss)
		return
	case err != nil:
		p.Failed += len(dss)
		r.log.Warn("shard: XA recovery: no decision", "xid", gt, "decision", d, "err", err)
		return
	}
	stmt, outcome := "XA ROLLBACK ", "rolled back"
	if commit {
		stmt, outcome = "XA COMMIT ", "committed"
	}
	var resolved, failed []string
	for _, ds := range dss {
		if ds == d && !commit { // decide rolled it back
			resolved = append(resolved, ds)
			continue
		}
		cn, err := connOf(ds)
		if err == nil {
			_, err = execOn(ctx, cn, stmt+(xaBranch{formatID: 1, gtrid: gt, bqual: xaTag(ds, xaGTRIDMax)}).sql())
		}
		if err != nil && !xaNotFound(err) { // XAER_NOTA: its coordinator, or another instance, did it
			failed = append(failed, ds)
			r.log.Warn("shard: XA recovery: "+stmt+"failed", "xid", gt, "dataSource", ds, "err", err)
			continue
		}
		if err == nil && !commit {
			r.durable(ctx, cn, ds)
		}
		resolved = append(resolved, ds)
	}
	if commit {
		p.Committed += len(resolved)
	} else {
		p.RolledBack += len(resolved)
	}
	p.Failed += len(failed)
	r.log.Info("shard: XA recovery: "+outcome+" prepared branches", "xid", gt, "decision", d, "dataSources", resolved)
}

// durable makes the rollbacks just run on data source ds durable
// (makeDurable).
func (r *xaRecovery) durable(ctx context.Context, cn driver.Conn, ds string) {
	err := makeDurable(ctx, func(ctx context.Context, q string) error { _, err := execOn(ctx, cn, q); return err })
	if err != nil {
		r.log.Warn("shard: XA recovery: making a rollback durable failed", "dataSource", ds, "err", err)
	}
}

// errXAHeld: the decision branch is prepared and a live session holds it.
var errXAHeld = errors.New("the decision branch is prepared and held by a live session")

// decide makes transaction gt's decision final on its decision data
// source d, and returns it: roll back the decision branch if it is still
// prepared (false), else the decision row tells (true if it exists).
func (r *xaRecovery) decide(ctx context.Context, connOf func(string) (driver.Conn, error), gt, d string) (commit bool, err error) {
	cn, err := connOf(d)
	if err != nil {
		return false, err
	}
	own := xaBranch{formatID: 1, gtrid: gt, bqual: xaTag(d, xaGTRIDMax)}
	_, err = execOn(ctx, cn, "XA ROLLBACK "+own.sql())
	if err == nil {
		r.durable(ctx, cn, d)
		return false, nil
	}
	if !xaNotFound(err) {
		return false, err
	}
	// Not there for this session: gone, or held by the session that
	// prepared it (its coordinator is alive). XA RECOVER lists the latter.
	bs, err := listXA(ctx, cn)
	if err != nil {
		return false, err
	}
	if slices.Contains(bs, own) {
		return false, errXAHeld
	}
	// Gone, hence committed or rolled back for good: the row, committed
	// with the branch, says which. Read on the primary: a replica may
	// not have it yet.
	return decisionExists(ctx, cn, gt)
}

// listXA lists the branches prepared on the primary of cn's data source.
func listXA(ctx context.Context, cn driver.Conn) ([]xaBranch, error) {
	rows, err := cn.(driver.QueryerContext).QueryContext(hint.Primary(ctx), "XA RECOVER", nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []xaBranch
	dest := make([]driver.Value, len(rows.Columns()))
	if len(dest) < 4 {
		return nil, fmt.Errorf("XA RECOVER returned %d columns, want 4", len(dest))
	}
	for {
		if err := rows.Next(dest); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		formatID, err1 := intValue(dest[0])
		gl, err2 := intValue(dest[1])
		bl, err3 := intValue(dest[2])
		data, ok := dest[3].([]byte)
		if s, isString := dest[3].(string); isString {
			data, ok = []byte(s), true
		}
		if err := errors.Join(err1, err2, err3); err != nil || !ok || gl < 0 || bl < 0 || gl+bl > int64(len(data)) {
			return nil, fmt.Errorf("XA RECOVER: unreadable row %v", dest)
		}
		out = append(out, xaBranch{formatID: formatID, gtrid: string(data[:gl]), bqual: string(data[gl : gl+bl])})
	}
}

func intValue(v driver.Value) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("not an integer: %T", v)
}

// decisionExists reads transaction gt's decision row on the primary. No
// table: no decision was ever recorded there.
func decisionExists(ctx context.Context, cn driver.Conn, gt string) (bool, error) {
	rows, err := cn.(driver.QueryerContext).QueryContext(hint.Primary(ctx),
		"SELECT 1 FROM "+xaDecisionTable+" WHERE gtrid = X'"+hex.EncodeToString([]byte(gt))+"'", nil)
	if noSuchTable(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	switch err := rows.Next(dest); err {
	case nil:
		return true, nil
	case io.EOF:
		return false, nil
	default:
		return false, err
	}
}

// oldDecisions lists decision rows older than age (by the server's
// clock), a bounded batch per pass. Read without locks: the rows of
// branches still prepared are not visible.
func oldDecisions(ctx context.Context, cn driver.Conn, age time.Duration) ([]string, error) {
	rows, err := cn.(driver.QueryerContext).QueryContext(hint.Primary(ctx), fmt.Sprintf(
		"SELECT gtrid FROM %s WHERE created < NOW(6) - INTERVAL %d MICROSECOND LIMIT 1000", xaDecisionTable, age.Microseconds()), nil)
	if noSuchTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	all, err := textColumn(rows, "gtrid")
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, gt := range all {
		if _, ok := parseGTRID(gt); ok { // only what needs no quoting
			out = append(out, gt)
		}
	}
	return out, nil
}

// execOn runs q on a logical connection of a data source.
func execOn(ctx context.Context, cn driver.Conn, q string) (driver.Result, error) {
	return cn.(driver.ExecerContext).ExecContext(hint.Primary(ctx), q, nil)
}
