package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every loop's next tick is the next epoch + k×interval after now,
// whenever the loop asks: loops that asked at different moments wake
// together.
func TestUntilTick(t *testing.T) {
	epoch := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const iv = time.Second
	for _, c := range []struct {
		after, want time.Duration
	}{
		{0, iv}, // at a tick: the next one
		{1 * time.Millisecond, 999 * time.Millisecond},
		{999 * time.Millisecond, time.Millisecond},
		{iv, iv},
		{7*iv + 250*time.Millisecond, 750 * time.Millisecond},
	} {
		got := untilTick(epoch, epoch.Add(c.after), iv)
		assert.Equal(t, c.want, got, "%v after the epoch", c.after)
		assert.Equal(t, time.Duration(0), (c.after+got)%iv, "%v after the epoch: lands on a tick", c.after)
	}
}
