package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rwshard/rwshard"
)

// XABranch is an XA branch prepared on a data source's primary, as
// PreparedBranches reports it.
type XABranch struct {
	DataSource string // the data source whose primary lists it
	FormatID   int64
	GTRID      string
	BQual      string
	// Rwshard: the branch of an rwshard transaction over these rules.
	// Then Started is when the transaction began (its coordinator's
	// clock) and Decision is the data source whose rwshard_xa_decision
	// row decides it. Other branches are listed with these fields
	// empty: rwshard never resolves them.
	Rwshard  bool
	Decision string
	Started  time.Time
}

// PreparedBranches lists the XA branches prepared on the primary of every
// data source of a sharded configuration, for `rwshard check`: the
// branches of rwshard transactions that began more than olderThan ago
// (recovery resolves those within two XARecoverInterval of it, while a
// connector with XA runs), and every branch rwshard does not know, which
// only an operator can resolve. A branch of a server that holds several
// data sources is listed once, under its own data source. The error
// names each data source that could not be read; the branches of the
// others are returned all the same.
func PreparedBranches(ctx context.Context, cfg *rwshard.Config, olderThan time.Duration) ([]XABranch, error) {
	cfgs, err := DataSourceConfigs(cfg)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(cfgs))
	nm := newXANames(names)
	now := time.Now()
	var out []XABranch
	var errs []error
	for _, ds := range names {
		bs, err := listDataSource(ctx, cfgs[ds])
		if err != nil {
			errs = append(errs, fmt.Errorf("shard: data source %s: XA RECOVER: %w", ds, err))
			continue
		}
		for _, b := range bs {
			xb := XABranch{DataSource: ds, FormatID: b.formatID, GTRID: b.gtrid, BQual: b.bqual}
			if g, ok := parseGTRID(b.gtrid); ok && b.formatID == 1 && nm.branch[b.bqual] != "" {
				if nm.branch[b.bqual] != ds || now.Sub(g.started) < olderThan {
					continue // listed under its own data source, or young
				}
				xb.Rwshard, xb.Decision, xb.Started = true, nm.decision[g.decision], g.started
				if xb.Decision == "" {
					xb.Decision = g.decision
				}
			}
			out = append(out, xb)
		}
	}
	return out, errors.Join(errs...)
}

// listDataSource runs XA RECOVER on the primary of a data source through
// a connector of its own, closed after.
func listDataSource(ctx context.Context, cfg *rwshard.Config) ([]xaBranch, error) {
	dc, err := rwshard.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	defer dc.Close()
	cn, err := dc.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cn.Close()
	return listXA(ctx, cn)
}
