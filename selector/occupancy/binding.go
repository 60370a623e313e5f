package occupancy

import (
	"fmt"
	"strings"
)

// Binding is gangtopo's part of a pending job's fields, as the controller
// saw it when it took the snapshot: the features expression and the
// exclusions the job_submit plugin (or the controller's re-binding) wrote
// into the job. The snapshot carries them for the plugin's job_modify,
// which cannot read a job's current fields (slurmctld's job record is not
// in any public header) and keeps this part when the job's user updates
// those fields (selector/jobsubmit, modify.go).
type Binding struct {
	// Job names the job as scontrol update does: "123", "123_4" for a task
	// of an array, "123+1" for a component of a heterogeneous job.
	Job string
	// Features is gangtopo's expression ("[gt_leaf3|gt_leaf1]"), "" when
	// it added none; Excluded the nodes it added to ExcNodeList.
	Features string
	Excluded string
}

type fileBinding struct {
	Job      string `json:"job"`
	Features string `json:"features,omitempty"`
	Excluded string `json:"excluded,omitempty"`
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
		s.Bindings = append(s.Bindings, Binding(b))
	}
	return nil
}

func (s *Snapshot) fileBindings() []fileBinding {
	out := make([]fileBinding, len(s.Bindings))
	for i, b := range s.Bindings {
		out[i] = fileBinding(b)
	}
	return out
}

// BindingOf finds the binding of the job an update names: the ID as
// given, else, for a task of a job array ("123_4") whose task is still in
// the array's pending record, the array's ("123"). het says the ID names
// a whole heterogeneous job whose components carry bindings of their own
// ("123" when "123+0" is listed).
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
			return Binding{}, false, true
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
