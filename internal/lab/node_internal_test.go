package lab

import "testing"

func TestFreePortBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if low > 11000 && (p < 10000 || p >= low) {
			t.Fatalf("port %d outside [10000, %d): outgoing connections may take it", p, low)
		}
	}
}
