package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/shard"
)

func fleetCommand() *command {
	return &command{
		name: "fleet",
		args: "[flags] CONFIG",
		summary: `Lists, from performance_schema.session_connect_attrs on every node of
CONFIG (every data source's with a sharding rules file), which programs
are connected with which rwshard version and which sharding rules: one
row per program × rwshard_version × rwshard_rules (the connection
attributes every rwshard connection carries; see docs/fleet.md) with its
instances (client host and process id), connections and users, then the
other clients (by program_name or _client_name). A row whose rules differ
from those of most instances of the same program is flagged (every row
of the program on a tie). Read-only: it runs SELECTs only.

Needs performance_schema=ON on the servers (MariaDB's default is OFF; a
restart), and SELECT on performance_schema.session_connect_attrs and
performance_schema.threads (GRANT SELECT ON performance_schema.* TO …).

Exit status 1 when rules differ within a program or a node could not be
read. With -json: {"nodes": [{"name", "addr", "connections", "error"}],
"programs": [{"program", "rwshard_version", "rules", "rwshard",
"instances", "connections", "users", "hosts", "nodes": {name: n},
"rules_differ"}], "warnings": […], "problems": N}; rwshard false for
clients without rwshard's attributes.`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			conn := addReportFlags(fs, "print the report as one JSON document")
			return func(ctx context.Context, e *env, args []string) int {
				cfg, code := conn.args(e, "fleet", args)
				if cfg == nil {
					return code
				}
				nodes, err := fleetNodes(cfg)
				if err != nil {
					e.errorf("fleet: %s", errText(nil, err))
					return exitProblem
				}
				rep := readFleet(ctx, nodes, *conn.timeout)
				if *conn.json {
					if code := writeJSON(e, rep); code != exitOK {
						return code
					}
				} else {
					rep.print(e.stdout)
				}
				if rep.Problems > 0 {
					return exitProblem
				}
				return exitOK
			}
		},
	}
}

// fleetNode is one server fleet reads, with the configuration to reach it.
type fleetNode struct {
	cfg  *rwshard.Config
	node rwshard.Node
}

// fleetNodes lists every node of cfg, or of every data source of its
// sharding rules file.
func fleetNodes(cfg *rwshard.Config) ([]fleetNode, error) {
	groups := map[string]*rwshard.Config{"": cfg}
	if cfg.Sharding.RulesFile != "" {
		var err error
		if groups, err = shard.DataSourceConfigs(cfg); err != nil {
			return nil, err
		}
	}
	var out []fleetNode
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		for _, n := range groups[name].Nodes {
			out = append(out, fleetNode{cfg: groups[name], node: n})
		}
	}
	return out, nil
}

// fleetReport is what fleet prints.
type fleetReport struct {
	Nodes    []fleetNodeJSON `json:"nodes"`
	Programs []*fleetRow     `json:"programs"`
	Warnings []string        `json:"warnings"`
	Problems int             `json:"problems"`
}

type fleetNodeJSON struct {
	Name        string `json:"name"`
	Addr        string `json:"addr"`
	Connections int    `json:"connections"` // with attributes, fleet's own excepted
	Error       string `json:"error,omitempty"`
}

// fleetRow is one program × rwshard version × rules.
type fleetRow struct {
	Program     string         `json:"program"`
	Version     string         `json:"rwshard_version"`
	Rules       string         `json:"rules"`
	RWShard     bool           `json:"rwshard"`
	Instances   int            `json:"instances"`
	Connections int            `json:"connections"`
	Users       []string       `json:"users"`
	Hosts       []string       `json:"hosts"`
	ByNode      map[string]int `json:"nodes"`
	RulesDiffer bool           `json:"rules_differ"`

	instances map[string]bool // host/pid
}

// fleetConn is one client connection as a node reports it.
type fleetConn struct {
	user, host string
	attrs      map[string]string
}

// errPerfSchemaOff: the server does not collect what fleet reads.
var errPerfSchemaOff = errors.New("performance_schema is OFF: fleet reads performance_schema.session_connect_attrs; start the server with performance_schema=ON (a restart)")

// readFleet reads every node concurrently and aggregates.
func readFleet(ctx context.Context, nodes []fleetNode, timeout time.Duration) *fleetReport {
	conns := make([]map[int64]*fleetConn, len(nodes))
	errs := make([]error, len(nodes))
	lost := make([]int64, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { conns[i], lost[i], errs[i] = readNode(ctx, n, timeout) })
	}
	wg.Wait()

	rep := &fleetReport{Programs: []*fleetRow{}, Warnings: []string{}}
	rows := map[[3]string]*fleetRow{}
	for i, n := range nodes {
		nj := fleetNodeJSON{Name: n.node.Name, Addr: n.node.Addr, Connections: len(conns[i])}
		if errs[i] != nil {
			nj.Error = fleetError(n, errs[i], timeout)
			rep.Problems++
		}
		if lost[i] > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the server dropped the attributes of %d connections since it started (Performance_schema_session_connect_attrs_lost): raise performance_schema_session_connect_attrs_size", n.node.Name, lost[i]))
		}
		rep.Nodes = append(rep.Nodes, nj)
		for _, c := range conns[i] {
			version, rws := c.attrs[rwshard.AttrVersion]
			program := cmp.Or(c.attrs[rwshard.AttrProgram], c.attrs["program_name"], c.attrs["_client_name"], "?")
			rules := c.attrs[rwshard.AttrRules]
			if !rws {
				version, rules = "-", "-"
			}
			key := [3]string{program, version, rules}
			r := rows[key]
			if r == nil {
				r = &fleetRow{Program: program, Version: version, Rules: rules, RWShard: rws,
					ByNode: map[string]int{}, instances: map[string]bool{}}
				rows[key] = r
			}
			r.Connections++
			r.ByNode[n.node.Name]++
			r.instances[c.host+"/"+c.attrs["_pid"]] = true
			if c.user != "" && !slices.Contains(r.Users, c.user) {
				r.Users = append(r.Users, c.user)
			}
			if c.host != "" && !slices.Contains(r.Hosts, c.host) {
				r.Hosts = append(r.Hosts, c.host)
			}
		}
	}
	for _, r := range rows {
		r.Instances = len(r.instances)
		slices.Sort(r.Users)
		slices.Sort(r.Hosts)
		if r.Users == nil {
			r.Users = []string{}
		}
		if r.Hosts == nil {
			r.Hosts = []string{}
		}
		rep.Programs = append(rep.Programs, r)
	}
	slices.SortFunc(rep.Programs, func(a, b *fleetRow) int {
		if a.RWShard != b.RWShard {
			if a.RWShard {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Program, b.Program), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Rules, b.Rules))
	})
	rep.Problems += flagRules(rep.Programs)
	return rep
}

// flagRules marks the rows whose rules differ from those of most
// instances of the same program (all of the program's on a tie), and
// returns how many it marked.
func flagRules(rows []*fleetRow) int {
	byProgram := map[string]map[string]int{} // program → rules → instances
	for _, r := range rows {
		if !r.RWShard {
			continue
		}
		if byProgram[r.Program] == nil {
			byProgram[r.Program] = map[string]int{}
		}
		byProgram[r.Program][r.Rules] += r.Instances
	}
	n := 0
	for _, r := range rows {
		counts := byProgram[r.Program]
		if !r.RWShard || len(counts) < 2 {
			continue
		}
		most, tie := 0, false
		for _, c := range counts {
			switch {
			case c > most:
				most, tie = c, false
			case c == most:
				tie = true
			}
		}
		if tie || counts[r.Rules] < most {
			r.RulesDiffer = true
			n++
		}
	}
	return n
}

// readNode returns the client connections of one node with their
// attributes (fleet's own left out), and the attributes the server
// dropped.
func readNode(ctx context.Context, n fleetNode, timeout time.Duration) (map[int64]*fleetConn, int64, error) {
	db, conn, err := dialNode(ctx, n.cfg, n.node, checkConnectTimeout(n.cfg))
	if err != nil {
		return nil, 0, &fleetConnectError{err}
	}
	defer db.Close()
	defer conn.Close()
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var on int64
	if err := conn.QueryRowContext(qctx, "SELECT @@global.performance_schema").Scan(&on); err != nil {
		return nil, 0, err
	}
	if on == 0 {
		return nil, 0, errPerfSchemaOff
	}
	rows, err := conn.QueryContext(qctx, `SELECT a.PROCESSLIST_ID, a.ATTR_NAME, a.ATTR_VALUE,
	COALESCE(t.PROCESSLIST_USER, ''), COALESCE(t.PROCESSLIST_HOST, '')
FROM performance_schema.session_connect_attrs a
LEFT JOIN performance_schema.threads t ON t.PROCESSLIST_ID = a.PROCESSLIST_ID
WHERE a.PROCESSLIST_ID <> CONNECTION_ID()`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := map[int64]*fleetConn{}
	for rows.Next() {
		var id int64
		var name, user, host string
		var value sql.NullString
		if err := rows.Scan(&id, &name, &value, &user, &host); err != nil {
			return nil, 0, err
		}
		c := out[id]
		if c == nil {
			c = &fleetConn{user: user, host: hostOnly(host), attrs: map[string]string{}}
			out[id] = c
		}
		c.attrs[name] = value.String
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	var lost int64
	var k string
	if err := conn.QueryRowContext(qctx, "SHOW GLOBAL STATUS LIKE 'Performance_schema_session_connect_attrs_lost'").Scan(&k, &lost); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, err
	}
	return out, lost, nil
}

// fleetConnectError: fleet could not connect to the node.
type fleetConnectError struct{ err error }

func (e *fleetConnectError) Error() string { return e.err.Error() }
func (e *fleetConnectError) Unwrap() error { return e.err }

// hostOnly is a processlist host without its client port.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// fleetError describes a node's failure, password-free, naming the
// privilege fleet needs when the server refused a statement.
func fleetError(n fleetNode, err error, timeout time.Duration) string {
	var me *mysql.MySQLError
	var ce *fleetConnectError
	switch {
	case errors.As(err, &ce):
		var denied bool
		return describeConnectError(n.cfg, ce.err, checkConnectTimeout(n.cfg), &denied)
	case errors.Is(err, errPerfSchemaOff):
		return err.Error()
	case errors.As(err, &me) && (me.Number == 1142 || me.Number == 1044):
		return fmt.Sprintf("%s: fleet needs SELECT on performance_schema.session_connect_attrs and performance_schema.threads (GRANT SELECT ON performance_schema.* TO '%s')",
			errText(n.cfg, err), n.cfg.Backend.User)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within -timeout=%s", timeout)
	}
	return errText(n.cfg, err)
}

// print writes the report as tables.
func (r *fleetReport) print(w io.Writer) {
	for _, n := range r.Nodes {
		if n.Error != "" {
			fmt.Fprintf(w, "%s (%s): %s\n", n.Name, n.Addr, n.Error)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tRWSHARD\tRULES\tINSTANCES\tCONNECTIONS\tUSERS\t")
	others := false
	for _, p := range r.Programs {
		if !p.RWShard && !others {
			others = true
			fmt.Fprintln(tw, "other clients:\t\t\t\t\t\t")
		}
		note := ""
		if p.RulesDiffer {
			note = "rules differ from the program's other instances"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", p.Program, p.Version, p.Rules, p.Instances, p.Connections, strings.Join(p.Users, ","), note)
	}
	tw.Flush()
	for _, warn := range r.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	if r.Problems > 0 {
		fmt.Fprintln(w, plural(r.Problems, "problem"))
	}
}
