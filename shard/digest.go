package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rwshard/rwshard"
)

// Digest is a short hash of the shape of r: what decides where rows go
// and which statements are allowed (data source names, tables, their data
// nodes, strategies and algorithms, key columns and generators, binding
// groups, broadcast tables and limits). It leaves out the data sources'
// DSNs: addresses differ between the hosts of one program for the same
// rules, and credentials must never leave the process in any form. Every
// backend connection of a sharded connector carries it as the connection
// attribute rwshard_rules, for `rwshard fleet`. An algorithm is known by
// its String (the built-in ones print their settings) and type.
func (r *Rules) Digest() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(r.DataSources)) {
		ds := r.DataSources[name]
		fmt.Fprintf(&b, "ds %s replicas=%d\n", name, len(ds.Replicas))
	}
	for _, name := range slices.Sorted(maps.Keys(r.Tables)) {
		t := r.Tables[name]
		fmt.Fprintf(&b, "table %s nodes=%v key=%s gen=%s bw=%t\n", name, t.DataNodes, t.KeyColumn, t.KeyGenerator, t.AllowBroadcastWrites)
		for _, s := range []*Strategy{t.DatabaseStrategy, t.TableStrategy} {
			if s == nil {
				b.WriteString(" -\n")
				continue
			}
			alg := fmt.Sprintf("%T", s.Algorithm)
			if st, ok := s.Algorithm.(fmt.Stringer); ok {
				alg += " " + st.String()
			}
			fmt.Fprintf(&b, " %s %s %s\n", s.Column, s.AlgorithmName, alg)
		}
	}
	for _, g := range r.BindingGroups {
		fmt.Fprintf(&b, "binding %v\n", g)
	}
	fmt.Fprintf(&b, "broadcast %v\ndefault %s\nmaxBroadcast %d refuse %t writes %t\n",
		slices.Sorted(slices.Values(r.Broadcast)), r.DefaultDataSource, r.MaxBroadcastShards, r.RefuseBroadcastReads, r.AllowBroadcastWrites)
	for _, name := range slices.Sorted(maps.Keys(r.KeyGenerators)) {
		fmt.Fprintf(&b, "keygen %s %T\n", name, r.KeyGenerators[name])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:6])
}

// withRules adds rwshard_rules:digest to go-sql-driver connection
// attributes, unless they name it already (the caller's attributes win,
// as in the driver).
func withRules(attrs, digest string) string {
	for kv := range strings.SplitSeq(attrs, ",") {
		if k, _, ok := strings.Cut(kv, ":"); ok && k == rwshard.AttrRules {
			return attrs
		}
	}
	if attrs != "" {
		attrs += ","
	}
	return attrs + rwshard.AttrRules + ":" + digest
}
