package lab

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards TCP connections to a node. It counts the command packets
// clients send (the MySQL packets that open a round trip: sequence id 0),
// and it can go silent: Silence stops forwarding bytes in both directions
// while every socket stays open, as a firewall that drops packets does;
// Resume forwards what was held back.
type Proxy struct {
	ln       net.Listener
	target   string
	commands atomic.Int64
	accepted atomic.Int64
	cutNext  atomic.Bool

	mu     sync.Mutex
	silent chan struct{} // non-nil while silent: closed by Resume
	conns  map[net.Conn]struct{}
	closed bool
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Commands is the number of command packets clients sent so far.
func (p *Proxy) Commands() int64 { return p.commands.Load() }

// Accepted is the number of client connections forwarded so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Cut closes every connection open now, as a server restart or a
// middlebox dropping its state does, and goes on accepting new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// CutOnNextCommand closes the connection that sends the next command
// packet, without forwarding it: a close its client's liveness check could
// not see, found by the statement sent on it.
func (p *Proxy) CutOnNextCommand() { p.cutNext.Store(true) }

// Silence stops forwarding; connections stay open and new ones are
// accepted (and hang).
func (p *Proxy) Silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.silent == nil {
		p.silent = make(chan struct{})
	}
}

// Resume forwards again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.silent != nil {
		close(p.silent)
		p.silent = nil
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.Resume()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	return p.ln.Close()
}

// gate blocks while the proxy is silent.
func (p *Proxy) gate() {
	p.mu.Lock()
	ch := p.silent
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			client.Close()
			server.Close()
			continue
		}
		p.accepted.Add(1)
		go func() { p.copy(client, server); client.Close() }()
		go func() { p.forward(server, client); server.Close(); client.Close() }()
	}
}

// copy forwards the server's bytes to the client.
func (p *Proxy) copy(client io.Writer, server io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.gate()
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward copies the client's packets to the server, counting commands.
func (p *Proxy) forward(server io.Writer, client io.Reader) {
	var header [4]byte
	for {
		if _, err := io.ReadFull(client, header[:]); err != nil {
			return
		}
		if header[3] == 0 {
			if p.cutNext.CompareAndSwap(true, false) {
				return // forward's caller closes both ends
			}
			p.commands.Add(1)
		}
		size := int64(header[0]) | int64(header[1])<<8 | int64(header[2])<<16
		p.gate()
		if _, err := server.Write(header[:]); err != nil {
			return
		}
		if _, err := io.CopyN(server, client, size); err != nil {
			return
		}
	}
}
