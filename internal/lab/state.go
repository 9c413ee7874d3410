package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A detached lab (Options.Detach) outlives the process that started it:
// `rwshard lab up` starts one and exits, `rwshard lab down` stops it later
// from another process. State is what that other process needs: Save writes
// it, Load reads it back, State.Stop ends the lab, and Attach rebuilds the
// Lab so that its faults can be injected from there (`rwshard lab fault`).

// State describes a running lab for another process.
type State struct {
	Dir   string      `json:"dir"` // the lab directory (removed by Stop)
	Nodes []NodeState `json:"nodes"`
}

// NodeState is one server of a saved lab.
type NodeState struct {
	Name     string `json:"name"`
	Group    string `json:"group"`
	Primary  bool   `json:"primary"` // the group's primary when saved
	ServerID int    `json:"server_id"`
	Port     int    `json:"port"`
	Dir      string `json:"dir"` // data directory
	PID      int    `json:"pid"` // 0: not running when saved
	// Galera is set for a node of a Galera cluster: its group
	// communication and state transfer ports, and the cluster address it
	// joins, which a restart from another process needs.
	Galera *GaleraState `json:"galera,omitempty"`
}

// GaleraState is what a saved Galera node has beyond a plain one.
type GaleraState struct {
	GcommPort int    `json:"gcomm_port"`
	ISTPort   int    `json:"ist_port"`
	SSTPort   int    `json:"sst_port"`
	Peers     string `json:"peers"` // gcomm:// address of every node
}

// Addr is the node's TCP address, host:port.
func (n NodeState) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// Alive reports whether the node's process is still running: its pid is a
// live mariadbd whose data directory is the node's. A pid reused by another
// process does not count.
func (n NodeState) Alive() bool {
	if n.PID <= 0 || !alive(n.PID) {
		return false
	}
	cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(n.PID), "cmdline"))
	if err != nil {
		return false
	}
	args := bytes.Split(cmd, []byte{0})
	return len(args) > 0 && bytes.Contains(args[0], []byte("mariadbd")) && datadir(args) == n.Dir
}

// Paused reports whether the node's process is alive and stopped by a
// signal (Lab.Pause), every thread of it.
func (n NodeState) Paused() bool { return n.Alive() && allStopped(n.PID) }

// datadir returns the --datadir argument of a command line, or "".
func datadir(args [][]byte) string {
	for _, a := range args {
		if d, ok := bytes.CutPrefix(a, []byte("--datadir=")); ok {
			return string(d)
		}
	}
	return ""
}

// State describes the lab as it is now, for Save.
func (l *Lab) State() State {
	s := State{Dir: l.Dir}
	for _, g := range l.Groups {
		p := g.Primary()
		for _, n := range g.Nodes {
			ns := NodeState{Name: n.Name, Group: n.Group, Primary: n == p,
				ServerID: n.ServerID, Port: n.Port, Dir: n.Dir, PID: n.pid()}
			if g := n.galera; g != nil {
				g.mu.Lock()
				ns.Galera = &GaleraState{GcommPort: g.gcommPort, ISTPort: g.istPort, SSTPort: g.sstPort, Peers: g.peers}
				g.mu.Unlock()
			}
			s.Nodes = append(s.Nodes, ns)
		}
	}
	return s
}

// Attach returns the lab s describes, with its groups, nodes, roles and
// running servers, so that the faults (Kill, Pause, Switchover, …) work on
// it from a process other than the one that started it. A server is taken
// as running only if its pid is still the node's mariadbd (see
// NodeState.Alive); a node restarted from here is detached again, and the
// caller saves the new State for the next process. Release the lab when
// done with it; Stop would end it.
func Attach(s *State) (*Lab, error) {
	l := &Lab{Dir: s.Dir}
	for _, name := range s.Groups() {
		g := &Group{Name: name}
		for _, ns := range s.Nodes {
			if ns.Group != name {
				continue
			}
			n := &Node{Name: ns.Name, Group: ns.Group, ServerID: ns.ServerID, Port: ns.Port,
				Dir: ns.Dir, detach: true, readOnly: !ns.Primary && ns.Galera == nil}
			if gs := ns.Galera; gs != nil {
				n.galera = &galeraNode{gcommPort: gs.GcommPort, istPort: gs.ISTPort, sstPort: gs.SSTPort,
					peers: gs.Peers, binDir: s.Dir}
			}
			if ns.Alive() {
				p, err := findProcess(ns.PID)
				if err != nil {
					return nil, fmt.Errorf("lab: attach %s (pid %d): %w", ns.Name, ns.PID, err)
				}
				n.proc = p
			}
			if ns.Primary {
				if g.primary != nil {
					return nil, fmt.Errorf("lab: attach: group %s has two primaries, %s and %s", name, g.primary.Name, ns.Name)
				}
				g.primary = n
			}
			g.Nodes = append(g.Nodes, n)
		}
		if g.primary == nil {
			return nil, fmt.Errorf("lab: attach: group %s has no primary", name)
		}
		l.Groups = append(l.Groups, g)
	}
	return l, nil
}

// Release closes the lab's admin connections and lets go of its
// processes, which keep running: it ends an Attach.
func (l *Lab) Release() {
	for _, n := range l.Nodes() {
		n.mu.Lock()
		p, admin := n.proc, n.admin
		n.proc, n.admin = nil, nil
		n.mu.Unlock()
		if admin != nil {
			admin.Close()
		}
		if p != nil {
			p.release()
		}
	}
}

// Save writes the lab's State to path as JSON, replacing the file
// atomically.
func (l *Lab) Save(path string) error {
	b, err := json.MarshalIndent(l.State(), "", "  ")
	if err != nil {
		return fmt.Errorf("lab: save: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("lab: save: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("lab: save: %w", err)
	}
	return nil
}

// Load reads a State written by Save. A missing file gives an error that
// matches os.ErrNotExist.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lab: load: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("lab: load %s: %w", path, err)
	}
	if s.Dir == "" || len(s.Nodes) == 0 {
		return nil, fmt.Errorf("lab: load %s: not a lab state (no directory or no nodes)", path)
	}
	return &s, nil
}

// Primary returns the saved primary of a group, or nil.
func (s *State) Primary(group string) *NodeState {
	for i := range s.Nodes {
		if s.Nodes[i].Group == group && s.Nodes[i].Primary {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Groups returns the group names in the order of their first node.
func (s *State) Groups() []string {
	var out []string
	for _, n := range s.Nodes {
		if len(out) == 0 || out[len(out)-1] != n.Group {
			out = append(out, n.Group)
		}
	}
	return out
}

// Stop kills the saved lab's servers (SIGKILL, after SIGCONT in case one
// is paused), waits until they are gone, and removes the lab directory. It
// signals only pids that are still the lab's servers (see Alive), and
// removes only a directory named like a lab's (DirPrefix). It returns how
// many servers it killed; stopping a lab that is already gone is not an
// error.
func (s *State) Stop() (killed int, err error) {
	var errs []error
	var pids []int
	for _, n := range s.Nodes {
		if !n.Alive() {
			continue
		}
		_ = syscall.Kill(n.PID, syscall.SIGCONT)
		if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("lab: kill %s (pid %d): %w", n.Name, n.PID, err))
			continue
		}
		pids = append(pids, n.PID)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			errs = append(errs, fmt.Errorf("lab: pid %d did not die after SIGKILL", pid))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(pids), err
	}
	if !strings.HasPrefix(filepath.Base(s.Dir), DirPrefix) || !filepath.IsAbs(s.Dir) {
		return len(pids), fmt.Errorf("lab: refusing to remove %q: not a lab directory (%s…)", s.Dir, DirPrefix)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return len(pids), fmt.Errorf("lab: %w", err)
	}
	return len(pids), nil
}
