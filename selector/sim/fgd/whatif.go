package fgd

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// Refusing is a what-if, not a policy to run: the policy made by f, except
// that every single-GPU pod asking for exactly milli of its GPU fails on
// arrival, room or not. It answers "how much idle capacity does this one
// shape cost?" on an unchanged arrival stream, which dropping the pods
// from the trace would not (the protocol would resample others in their
// place).
//
// It breaks the protocol's rule that a pod that fits is placed, but not
// Run's assumption that a pod type refused once is refused for good: the
// refused shape is refused every time.
func Refusing(f Factory, milli int) Factory {
	return func(env *Env) (Policy, error) {
		p, err := f(env)
		if err != nil {
			return nil, err
		}
		return &refusing{p, milli}, nil
	}
}

type refusing struct {
	Policy
	milli int
}

func (r *refusing) Name() string {
	return fmt.Sprintf("%s, %d-milli pods refused", r.Policy.Name(), r.milli)
}

func (r *refusing) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	if j.GPUs == 1 && j.Milli == r.milli {
		return occupancy.Allocation{}, false
	}
	return r.Policy.Place(s, j)
}
