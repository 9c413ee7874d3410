package shard

import (
	"slices"
	"strings"
)

// ShardingSphere's !READWRITE_SPLITTING rule. Each group (5.0–5.4.0
// "dataSources", 5.4.1+ "dataSourceGroups") becomes one rwshard data
// source: the write data source's DSN is its primary, the read data
// sources' DSNs its replicas, in order. Sharding data nodes then name the
// groups; a data source that is in a group is no longer a data source of
// its own.

// ssBalancers maps ShardingSphere load balancer types to rwshard's
// balance policies.
var ssBalancers = map[string]string{
	"ROUND_ROBIN": "round_robin",
	"RANDOM":      "random",
	"WEIGHT":      "weighted",
}

func (s *ssReader) readwrite(rule yamlPair) error {
	pairs, err := s.ruleMapping(rule)
	if err != nil {
		return err
	}
	var groups *yamlPair
	for _, p := range pairs {
		switch p.key {
		case "dataSources", "dataSourceGroups":
			if groups != nil {
				return s.errf(p.kn, p.path, "both %s and %s given", groups.key, p.key)
			}
			groups = &p
		case "loadBalancers":
			if err := s.loadBalancers(p); err != nil {
				return err
			}
		default:
			return s.unknownKey(p, "dataSourceGroups", "dataSources", "loadBalancers")
		}
	}
	if groups == nil {
		return s.errf(rule.kn, rule.path, "no dataSourceGroups")
	}
	entries, err := s.mapping(groups.v, groups.path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := s.group(e); err != nil {
			return err
		}
	}
	return nil
}

// group reads one read/write splitting group in any of its 5.x shapes:
// flat writeDataSourceName/readDataSourceNames (5.0, 5.4+),
// staticStrategy (5.2–5.3), type Static with props (5.1).
func (s *ssReader) group(e yamlPair) error {
	g := &ssGroup{name: e.key, path: e.path, kn: e.kn}
	fields, err := s.mapping(e.v, e.path)
	if err != nil {
		return err
	}
	var static, props, typ *yamlPair
	flat := false
	for _, f := range fields {
		switch f.key {
		case "writeDataSourceName", "readDataSourceNames":
			flat = true
			err = s.groupMember(g, f, f.key == "writeDataSourceName")
		case "loadBalancerName":
			g.lbPath, g.lbKN = f.path, f.kn
			g.lb, err = s.str(f.v, f.path)
		case "transactionalReadQueryStrategy":
			var v string
			if v, err = s.str(f.v, f.path); err == nil && !strings.EqualFold(v, "PRIMARY") {
				err = s.errf(f.kn, f.path, "%q is not supported: rwshard runs every statement of a transaction on the primary (PRIMARY)", v)
			}
		case "staticStrategy":
			static = &f
		case "type":
			typ = &f
		case "props":
			props = &f
		case "dynamicStrategy":
			err = s.errf(f.kn, f.path, "dynamic strategies (roles from a !DB_DISCOVERY rule) are not supported: "+
				"list the write and read data sources; rwshard follows switchovers among them itself")
		default:
			err = s.unknownKey(f, "writeDataSourceName", "readDataSourceNames", "loadBalancerName",
				"transactionalReadQueryStrategy", "staticStrategy", "type", "props")
		}
		if err != nil {
			return err
		}
	}
	shapes := 0
	for _, b := range []bool{flat, static != nil, typ != nil || props != nil} {
		if b {
			shapes++
		}
	}
	if shapes > 1 {
		return s.errf(e.kn, e.path, "mixes writeDataSourceName/readDataSourceNames, staticStrategy and type/props: give one")
	}
	switch {
	case static != nil:
		if err := s.groupMembers(g, *static, "writeDataSourceName", "readDataSourceNames"); err != nil {
			return err
		}
	case typ != nil || props != nil:
		if typ == nil {
			return s.errf(props.kn, props.path, "props need type: Static")
		}
		t, err := s.str(typ.v, typ.path)
		if err != nil {
			return err
		}
		if !strings.EqualFold(t, "Static") {
			return s.errf(typ.kn, typ.path, "%q is not supported: only Static groups (list the write and read data sources; rwshard follows switchovers itself)", t)
		}
		if props == nil {
			return s.errf(typ.kn, typ.path, "type Static needs props write-data-source-name and read-data-source-names")
		}
		if err := s.groupMembers(g, *props, "write-data-source-name", "read-data-source-names"); err != nil {
			return err
		}
	}
	if g.write == "" {
		return s.errf(e.kn, e.path, "no writeDataSourceName")
	}
	s.groups = append(s.groups, g)
	return nil
}

// groupMembers reads a group's staticStrategy, or the props of its type
// Static, into g: a mapping whose keys may be write (the write data
// source name) and read (the read data source names).
func (s *ssReader) groupMembers(g *ssGroup, p yamlPair, write, read string) error {
	fields, err := s.mapping(p.v, p.path)
	if err != nil {
		return err
	}
	for _, f := range fields {
		switch f.key {
		case write, read:
			err = s.groupMember(g, f, f.key == write)
		default:
			err = s.unknownKey(f, write, read)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// groupMember reads the write data source name or the read data source
// names (a list or a comma-separated string) of a group.
func (s *ssReader) groupMember(g *ssGroup, f yamlPair, write bool) error {
	var err error
	if write {
		g.wPath, g.wKN = f.path, f.kn
		g.write, err = s.str(f.v, f.path)
		return err
	}
	g.rPath, g.rKN = f.path, f.kn
	if g.reads, err = s.strs(f.v, f.path, true); err != nil {
		return err
	}
	g.rNodes = s.listItems(f.v, f.path)
	return nil
}

func (s *ssReader) loadBalancers(p yamlPair) error {
	entries, err := s.mapping(p.v, p.path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		lb := &ssLoadBalancer{name: e.key, path: e.path, kn: e.kn}
		fields, err := s.mapping(e.v, e.path)
		if err != nil {
			return err
		}
		var propsPair *yamlPair
		for _, f := range fields {
			switch f.key {
			case "type":
				var t string
				if t, err = s.str(f.v, f.path); err != nil {
					return err
				}
				lb.typ = strings.ToUpper(t)
				if _, ok := ssBalancers[lb.typ]; !ok {
					return s.errf(f.kn, f.path, "load balancer type %q is not supported; supported: ROUND_ROBIN, RANDOM, WEIGHT", t)
				}
			case "props":
				propsPair = &f
			default:
				return s.unknownKey(f, "type", "props")
			}
		}
		if lb.typ == "" {
			return s.errf(e.kn, e.path, "no type")
		}
		if propsPair != nil {
			if lb.wPairs, err = s.mapping(propsPair.v, propsPair.path); err != nil {
				return err
			}
			if lb.typ != "WEIGHT" && len(lb.wPairs) > 0 {
				return s.errf(lb.wPairs[0].kn, lb.wPairs[0].path, "%s takes no properties", lb.typ)
			}
		}
		s.lbs[e.key] = lb
	}
	return nil
}

// assemble turns the raw data sources and the read/write splitting groups
// into Config.DataSources, and gives the tables that have no
// actualDataNodes the logical table in every data source.
func (s *ssReader) assemble() error {
	c := s.c
	c.DataSources = map[string]DataSourceConfig{}
	var visible []string
	rawNames := func() string {
		names := make([]string, len(s.raw))
		for i, d := range s.raw {
			names[i] = d.name
		}
		return strings.Join(names, ", ")
	}
	for _, g := range s.groups {
		members := append([]string{g.write}, g.reads...)
		for i, m := range members {
			path, kn := g.wPath, g.wKN
			if i > 0 {
				path, kn = g.rPath, g.rKN
				if i-1 < len(g.rNodes) {
					path, kn = indexKey(g.rPath, i-1), g.rNodes[i-1]
				}
			}
			if m == "" {
				return s.errf(kn, path, "empty data source name")
			}
			if _, ok := s.rawByNm[m]; !ok {
				return s.errf(kn, path, "data source %q is not defined; dataSources: %s", m, rawNames())
			}
			if i > 0 && m == g.write {
				return s.errf(kn, path, "%s is the write data source; a read data source must be another one", m)
			}
			if i > 1 && slices.Contains(members[1:i], m) {
				return s.errf(kn, path, "read data source %s listed twice", m)
			}
		}
		for _, m := range members {
			s.rawByNm[m].used = true
		}
	}
	for _, g := range s.groups {
		if d, ok := s.rawByNm[g.name]; ok && !d.used {
			return s.errf(g.kn, g.path, "the group's name is also the name of data source %s, which is in no group", g.name)
		}
		ds := DataSourceConfig{Primary: s.rawByNm[g.write].dsn, Balance: "round_robin"}
		key := "dataSources." + g.name
		s.record(key, g.path, g.kn)
		s.record(key+".primary", g.wPath, g.wKN)
		for i, m := range g.reads {
			ds.Replicas = append(ds.Replicas, s.rawByNm[m].dsn)
			if i < len(g.rNodes) {
				s.record(indexKey(key+".replicas", i), indexKey(g.rPath, i), g.rNodes[i])
			} else {
				s.record(indexKey(key+".replicas", i), g.rPath, g.rKN)
			}
		}
		if g.lb != "" {
			s.record(key+".balance", g.lbPath, g.lbKN)
			lb, ok := s.lbs[g.lb]
			if !ok {
				return s.errf(g.lbKN, g.lbPath, "load balancer %q is not defined; loadBalancers: %s", g.lb,
					pickName(len(s.lbs) > 0, strings.Join(sortedNames(s.lbs), ", "), "(none)"))
			}
			ds.Balance = ssBalancers[lb.typ]
			if lb.typ == "WEIGHT" {
				w, err := s.weights(g, lb, key)
				if err != nil {
					return err
				}
				ds.Weights = w
			}
		}
		c.DataSources[g.name] = ds
		visible = append(visible, g.name)
	}
	if err := s.unusedWeights(); err != nil {
		return err
	}
	for _, d := range s.raw {
		if d.used {
			continue
		}
		key := "dataSources." + d.name
		s.record(key, d.path, d.kn)
		s.record(key+".primary", d.urlPath, d.urlKN)
		c.DataSources[d.name] = DataSourceConfig{Primary: d.dsn}
		visible = append(visible, d.name)
	}
	for _, t := range s.noNodes {
		tc := c.Tables[t]
		nodes := make([]string, len(visible))
		for i, ds := range visible {
			nodes[i] = ds + "." + t
		}
		tc.DataNodes = strings.Join(nodes, ", ")
		c.Tables[t] = tc
	}
	return nil
}

// weights reads a WEIGHT load balancer's weights for the read data
// sources of one group, in their order; every one needs a weight.
func (s *ssReader) weights(g *ssGroup, lb *ssLoadBalancer, key string) ([]float64, error) {
	s.record(key+".weights", lb.path+".props", lb.kn)
	out := make([]float64, len(g.reads))
	for i, m := range g.reads {
		j := slices.IndexFunc(lb.wPairs, func(p yamlPair) bool { return p.key == m })
		if j < 0 {
			return nil, s.errf(lb.kn, lb.path+".props", "no weight for read data source %s of group %s", m, g.name)
		}
		p := lb.wPairs[j]
		s.record(indexKey(key+".weights", i), p.path, p.kn)
		w, err := s.number(p.v, p.path)
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

// unusedWeights rejects a WEIGHT property that names no read data source
// of a group using that load balancer: it would weigh nothing.
func (s *ssReader) unusedWeights() error {
	for _, name := range sortedNames(s.lbs) {
		lb := s.lbs[name]
		if lb.typ != "WEIGHT" {
			continue
		}
		for _, p := range lb.wPairs {
			used := slices.ContainsFunc(s.groups, func(g *ssGroup) bool {
				return g.lb == name && slices.Contains(g.reads, p.key)
			})
			if !used {
				return s.errf(p.kn, p.path, "weight for %s, which is not a read data source of a group using load balancer %s", p.key, name)
			}
		}
	}
	return nil
}
