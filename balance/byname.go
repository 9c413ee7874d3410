package balance

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownPolicy is wrapped by the error ByName returns for a name it
// does not know.
var ErrUnknownPolicy = errors.New("unknown balance policy")

// Names returns the names of the built-in policies, as ByName and the DSN
// key rwshard.balance take them. The caller owns the slice.
func Names() []string {
	return []string{"round_robin", "random", "weighted", "least_in_flight", "latency"}
}

// ByName returns a new built-in policy by name: "round_robin", "random",
// "least_in_flight" or "latency". Each call returns a fresh policy with its
// own state.
//
// "weighted" is refused with an error saying that it needs weights: build
// it with NewWeighted. Any other name is an error wrapping
// ErrUnknownPolicy that names it and lists the valid names. Names are
// matched exactly (lower case, underscores).
func ByName(name string) (Policy, error) {
	switch name {
	case "round_robin":
		return NewRoundRobin(), nil
	case "random":
		return NewRandom(), nil
	case "least_in_flight":
		return NewLeastInFlight(), nil
	case "latency":
		return NewLatency(), nil
	case "weighted":
		return nil, fmt.Errorf("balance: policy %q needs a weight per node: build it with NewWeighted (DSN: rwshard.weights)", name)
	}
	return nil, fmt.Errorf("balance: policy %q: %w; valid names: %s",
		name, ErrUnknownPolicy, strings.Join(Names(), ", "))
}
