package occupancy

import (
	"fmt"
	"slices"
	"strings"
)

// Binding is gangtopo's part of a pending job's fields, as the controller
// saw it when it took the snapshot: the features expression and the
// exclusions the job_submit plugin (or the controller's re-binding) wrote
// into the job, and whose job it is. The snapshot carries them for the
// plugin's job_modify, which cannot read a job's current fields
// (slurmctld's job record is not in any public header) and keeps this part
// when the job's user updates those fields (selector/jobsubmit, modify.go).
type Binding struct {
	// Job names the job as scontrol update does: "123", "123_4" for a task
	// of an array, "123+1" for a component of a heterogeneous job.
	Job string
	// User is the uid of the job's owner as squeue reports it, when
	// HasUser (a controller older than the field does not say). Slurm
	// 22.05 calls job_modify before it checks who may update the job, and
	// this is how the plugin tells the owner's update from anyone else's.
	User    uint32
	HasUser bool
	// Features is gangtopo's expression ("[gt_leaf3|gt_leaf1]"), "" when
	// it added none; Excluded the nodes it added to ExcNodeList.
	Features string
	Excluded string
}

// Owner says whether uid owns the job; known is false when the snapshot
// does not say.
func (b Binding) Owner(uid uint32) (owns, known bool) {
	return b.HasUser && b.User == uid, b.HasUser
}

type fileBinding struct {
	Job      string  `json:"job"`
	User     *uint32 `json:"user_id,omitempty"`
	Features string  `json:"features,omitempty"`
	Excluded string  `json:"excluded,omitempty"`
}

// maxBindingField bounds a binding's strings: a matching OR of 64
// alternatives, or a host list, is far shorter.
const maxBindingField = 4096

func (s *Snapshot) readBindings(fb []fileBinding) error {
	seen := map[string]bool{}
	for i, b := range fb {
		switch {
		case b.Job == "" || strings.ContainsAny(b.Job, " \t\n"):
			return fmt.Errorf("bindings[%d]: job %q is not a job ID", i, b.Job)
		case seen[b.Job]:
			return fmt.Errorf("bindings[%d]: job %s listed twice", i, b.Job)
		case len(b.Features) > maxBindingField || len(b.Excluded) > maxBindingField:
			return fmt.Errorf("bindings[%d] (job %s): longer than %d bytes", i, b.Job, maxBindingField)
		}
		seen[b.Job] = true
		x := Binding{Job: b.Job, Features: b.Features, Excluded: b.Excluded}
		if b.User != nil {
			x.User, x.HasUser = *b.User, true
		}
		s.Bindings = append(s.Bindings, x)
	}
	return nil
}

func (s *Snapshot) fileBindings() []fileBinding {
	out := make([]fileBinding, len(s.Bindings))
	for i, b := range s.Bindings {
		out[i] = fileBinding{Job: b.Job, Features: b.Features, Excluded: b.Excluded}
		if b.HasUser {
			u := b.User
			out[i].User = &u
		}
	}
	return out
}

// BindingOf finds the binding of the job an update names: the ID as
// given, else, for a task of a job array ("123_4") whose task is still in
// the array's pending record, the array's ("123"). het says the ID names
// a whole heterogeneous job whose components carry bindings of their own
// ("123" when "123+0" is listed); b is then the first component's, for
// its owner.
func (s *Snapshot) BindingOf(id string) (b Binding, ok, het bool) {
	for _, try := range []string{id, arrayOf(id)} {
		for _, x := range s.Bindings {
			if x.Job == try && try != "" {
				return x, true, false
			}
		}
	}
	for _, x := range s.Bindings {
		if x.Job == id+"+0" {
			return x, false, true
		}
	}
	return Binding{}, false, false
}

// arrayOf is the array's ID of a task ID "123_4", else "".
func arrayOf(id string) string {
	if a, _, ok := strings.Cut(id, "_"); ok {
		return a
	}
	return ""
}

// maxPendingHolds bounds the holds a snapshot lists: Slurm's MaxJobCount
// is 10,000 by default, and a site's is rarely ten times that.
const maxPendingHolds = 1 << 20

func (s *Snapshot) readPendingHolds(holds *[]string) error {
	if holds == nil {
		return nil
	}
	if len(*holds) > maxPendingHolds {
		return fmt.Errorf("pending_holds: %d holds, more than %d", len(*holds), maxPendingHolds)
	}
	s.PendingHolds = make(map[string]bool, len(*holds))
	for i, h := range *holds {
		if h == "" || len(h) > 64 || strings.ContainsAny(h, " \t\n") {
			return fmt.Errorf("pending_holds[%d]: %q is not a hold", i, h)
		}
		s.PendingHolds[h] = true
	}
	return nil
}

func (s *Snapshot) filePendingHolds() *[]string {
	if s.PendingHolds == nil {
		return nil
	}
	out := make([]string, 0, len(s.PendingHolds))
	for h := range s.PendingHolds {
		out = append(out, h)
	}
	slices.Sort(out)
	return &out
}
