package lab

// SetPickPort makes Start choose new nodes' ports with f until restore is
// called.
func SetPickPort(f func() (int, error)) (restore func()) {
	old := pickPort
	pickPort = f
	return func() { pickPort = old }
}

// FreePort is freePort.
func FreePort() (int, error) { return freePort() }
