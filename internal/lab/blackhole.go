package lab

import (
	"net"
	"sync"
)

// Blackhole is a TCP listener that accepts connections and never answers,
// like a host behind a firewall that drops packets after the handshake: a
// client waiting for the MySQL greeting hangs until its own timeout.
type Blackhole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

// NewBlackhole listens on a free loopback port.
func NewBlackhole() (*Blackhole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Blackhole{ln: ln, done: make(chan struct{})}
	go b.serve()
	return b, nil
}

func (b *Blackhole) serve() {
	defer close(b.done)
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
	}
}

// Addr is the listener's host:port.
func (b *Blackhole) Addr() string { return b.ln.Addr().String() }

// Accepted is the number of connections accepted so far.
func (b *Blackhole) Accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// Close stops listening and drops every held connection.
func (b *Blackhole) Close() error {
	err := b.ln.Close()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
	b.conns = nil
	return err
}
