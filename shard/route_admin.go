package shard

// Statements that name a list of tables and run on each data source over
// the physical tables it holds: the table maintenance statements ANALYZE,
// CHECK, CHECKSUM, OPTIMIZE and REPAIR TABLE, and DROP TABLE of several
// tables. One unit per data source names every physical table of the
// statement's logical tables that lives there (ShardingSphere sends the
// same statement per data source with the physical names): sharded tables
// their data nodes, broadcast tables their own name on every data source,
// other tables their name on the default data source.
//
// vitess parses only some forms of the maintenance statements (ANALYZE of
// one table; OPTIMIZE and REPAIR without their tables; CHECK and CHECKSUM
// not at all), so they are read from tokens:
//
//	ANALYZE | OPTIMIZE | REPAIR [NO_WRITE_TO_BINLOG | LOCAL] TABLE[S] t [, t] … [options]
//	CHECK | CHECKSUM TABLE[S] t [, t] … [options]
//
// with the options MySQL and MariaDB document for each (CHECK: FOR
// UPGRADE, QUICK, FAST, MEDIUM, EXTENDED, CHANGED; CHECKSUM: QUICK,
// EXTENDED; REPAIR: QUICK, EXTENDED, USE_FRM; ANALYZE and OPTIMIZE: none,
// so histograms and MariaDB's PERSISTENT FOR are refused). A statement of
// one of these verbs that does not read as that, and names a sharded or
// broadcast table, is refused with ErrUnsupported.
//
// Their result rows (Table, Op, Msg_type, Msg_text; CHECKSUM: Table,
// Checksum) are the servers' own, one data source after the other: they
// name physical tables ("db_1.t_order_3"), which is what was checked.

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// tableAdmin is a maintenance statement read from its tokens.
type tableAdmin struct {
	verb           string                // lower case
	prefix, suffix string                // text before the first table, after the last
	tables         []sqlparser.TableName // as written
}

// adminOptions are the words allowed after the table list, per verb; nil:
// none. adminModifiers are the verbs that take NO_WRITE_TO_BINLOG or LOCAL.
var (
	adminOptions = map[string]map[string]bool{
		"analyze":  nil,
		"optimize": nil,
		"repair":   {"quick": true, "extended": true, "use_frm": true},
		"check":    {"for": true, "upgrade": true, "quick": true, "fast": true, "medium": true, "extended": true, "changed": true},
		"checksum": {"quick": true, "extended": true},
	}
	adminModifiers = map[string]bool{"analyze": true, "optimize": true, "repair": true}
)

type adminToken struct {
	typ        int
	val        string
	start, end int
}

// adminVerb returns the lower-case first word of sql when it is a table
// maintenance verb, else "".
func (r *Router) adminVerb(sql string) string {
	tkn := r.parser.NewStringTokenizer(sql)
	for {
		typ, val := tkn.Scan()
		if typ == sqlparser.COMMENT {
			continue
		}
		if strings.HasSuffix(sql[:min(tkn.Pos, len(sql))], "`") { // `analyze` is a name
			return ""
		}
		v := strings.ToLower(val)
		if _, ok := adminOptions[v]; ok {
			return v
		}
		return ""
	}
}

// parseTableAdmin reads a maintenance statement; ok false: it is not of
// the form above.
func (r *Router) parseTableAdmin(sql string) (tableAdmin, bool) {
	var toks []adminToken
	tkn := r.parser.NewStringTokenizer(sql)
	for {
		before := tkn.Pos
		typ, val := tkn.Scan()
		if typ == 0 {
			break
		}
		if typ == sqlparser.LEX_ERROR {
			return tableAdmin{}, false
		}
		if typ == sqlparser.COMMENT {
			continue
		}
		end := min(tkn.Pos, len(sql))
		start := before
		for start < end && strings.ContainsRune(" \t\r\n", rune(sql[start])) {
			start++
		}
		toks = append(toks, adminToken{typ: typ, val: val, start: start, end: end})
	}
	if n := len(toks); n > 0 && toks[n-1].typ == ';' {
		toks = toks[:n-1]
	}
	word := func(i int) string { // a word, not a `name`
		if i >= len(toks) || toks[i].start >= len(sql) || sql[toks[i].start] == '`' {
			return ""
		}
		return strings.ToLower(toks[i].val)
	}
	var s tableAdmin
	s.verb = word(0)
	opts, ok := adminOptions[s.verb]
	if !ok {
		return s, false
	}
	i := 1
	if adminModifiers[s.verb] && (word(i) == "no_write_to_binlog" || word(i) == "local") {
		i++
	}
	if w := word(i); w != "table" && w != "tables" {
		return s, false
	}
	i++
	if i >= len(toks) {
		return s, false
	}
	s.prefix = sql[:toks[i].start]
	for {
		if i >= len(toks) || toks[i].typ != sqlparser.ID {
			return s, false
		}
		name := sqlparser.TableName{Name: sqlparser.NewIdentifierCS(toks[i].val)}
		if i+2 < len(toks) && toks[i+1].typ == '.' && toks[i+2].typ == sqlparser.ID {
			name = sqlparser.TableName{Qualifier: sqlparser.NewIdentifierCS(toks[i].val), Name: sqlparser.NewIdentifierCS(toks[i+2].val)}
			i += 2
		}
		s.tables = append(s.tables, name)
		end := toks[i].end
		i++
		if i < len(toks) && toks[i].typ == ',' {
			i++
			continue
		}
		s.suffix = sql[end:]
		break
	}
	for ; i < len(toks); i++ {
		if !opts[word(i)] {
			return s, false
		}
	}
	return s, true
}

// analyzeTableAdmin routes a maintenance statement that names a sharded or
// broadcast table; nil when sql is not one (the ordinary analysis takes
// it: a statement naming only tables of the default data source goes
// there as it is).
func (r *Router) analyzeTableAdmin(sql string) *routePlan {
	verb := r.adminVerb(sql)
	if verb == "" {
		return nil
	}
	s, ok := r.parseTableAdmin(sql)
	if !ok {
		if name := r.mentionedTable(sql, nil); name != "" {
			return &routePlan{err: &RouteError{Table: name, SQL: sql,
				Err: unsupported("%s naming table %s in a form rwshard does not read (it reads %s TABLE t, … with the options of %s TABLE; not histograms, PERSISTENT FOR, placeholders, …)", strings.ToUpper(verb), name, strings.ToUpper(verb), strings.ToUpper(verb))}}
		}
		return nil
	}
	routed := false
	for _, t := range s.tables {
		name := strings.ToLower(t.Name.String())
		routed = routed || r.tables[name] != nil || r.broadcast[name]
	}
	if !routed {
		return nil
	}
	p, err := r.perSourcePlan(s.tables, func(names sqlparser.TableNames) string {
		var b strings.Builder
		b.WriteString(s.prefix)
		for i, n := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(sqlparser.String(n))
		}
		b.WriteString(s.suffix)
		return b.String()
	})
	if err != nil {
		err.SQL = sql
		return &routePlan{err: err}
	}
	return p
}

// perSourcePlan is the plan of a statement over tables that runs once per
// data source with that data source's physical tables, which text prints.
// Sharded and broadcast tables lose their database qualifier; other tables
// keep theirs (it names a database of the default data source).
func (r *Router) perSourcePlan(tables []sqlparser.TableName, text func(sqlparser.TableNames) string) (*routePlan, *RouteError) {
	byDS := make(map[string]sqlparser.TableNames)
	p := &routePlan{kind: planUnits, reason: ReasonAllShards}
	seen := make(map[string]bool)
	for _, tn := range tables {
		name := strings.ToLower(tn.Name.String())
		if !seen[name] {
			seen[name] = true
			p.tables = append(p.tables, name)
		}
		switch t := r.tables[name]; {
		case t != nil:
			if t.err != nil {
				return nil, &RouteError{Table: name, Err: unsupported("%v", t.err)}
			}
			for _, n := range t.nodes {
				byDS[n.DataSource] = append(byDS[n.DataSource], sqlparser.TableName{Name: sqlparser.NewIdentifierCS(n.Table)})
			}
		case r.broadcast[name]:
			if len(r.dsNames) == 0 {
				return nil, &RouteError{Table: name, Err: unsupported("no data source is configured")}
			}
			for _, ds := range r.dsNames {
				byDS[ds] = append(byDS[ds], sqlparser.TableName{Name: tn.Name})
			}
		default:
			ds := r.rules.DefaultDataSource
			if ds == "" {
				return nil, &RouteError{Table: name, Err: fmt.Errorf("%w: it is neither sharded nor broadcast and there is no default data source", ErrUnknownTable)}
			}
			byDS[ds] = append(byDS[ds], tn)
		}
	}
	for _, ds := range r.dsNames {
		if names := byDS[ds]; len(names) > 0 {
			p.units = append(p.units, Unit{DataSource: ds, SQL: text(names)})
		}
	}
	return p, nil
}
