package jobsubmit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// A user's update of a job keeps gangtopo's binding.
//
// `scontrol update JobId=X Features=...` replaces a pending job's features
// and with them gangtopo's matching OR; `ExcNodeList=...` replaces the
// exclusions gangtopo added. slurmctld calls job_modify with only the
// fields the update sets, and the job's current fields are out of reach
// there (job_ptr is slurmctld's private record), so the plugin cannot see
// what the job is bound to. The controller can: it publishes, with each
// snapshot, gangtopo's part of every pending job it bound
// (occupancy.Binding). KeepBinding adds that part to the user's new
// values: the features become "(new)&[gangtopo's]" (as the rewrite writes
// them), the exclusions the user's plus gangtopo's.
//
// Not covered, and why:
//   - a job updated before the controller published its binding (up to one
//     controller cycle after submit, 5 s by default) passes as updated;
//   - updates of the size (NumNodes, GPUs) keep the binding as it is; if it
//     can then never hold the job, the controller's re-binding replaces it
//     (rebind.go);
//   - an update naming a whole heterogeneous job ("123" for components
//     123+0, 123+1, ...) is refused when it sets features or exclusions:
//     job_modify is called once per component with the same update and
//     cannot tell which component it is called for, and each carries its
//     own binding. Updating the components one by one works;
//   - new features that, with gangtopo's expression added, would pass
//     Slurm's 1024 bytes (limits.go) pass as given: Slurm would refuse the
//     update otherwise.
//
// Root and slurmctld's own user pass untouched (the C shim does not even
// ask): the controller's re-binding and `gangtopo unbind --clear` change
// bindings on purpose.
//
// Who may update, and what it costs. Slurm 22.05 calls job_modify before
// it checks that the caller may update the job (job_mgr.c _update_job:
// job_submit_plugin_modify, then "Security violation, JOB_UPDATE RPC");
// 24.11 and 26.05 check first. So on 22.05 any user's update of any job
// reaches here. The binding carries the owner's uid, as the controller
// read it from squeue: an update by anyone else passes as given, at the
// cost of one look-up and without reading its fields. Slurm then refuses
// it, unless the caller is an operator or a coordinator of the job's
// account, whose update Slurm carries out as given, like root's.
// job_desc's own user_id is not asked: 22.05 fills it with the owner's
// only when the update left it unset, so a crafted update could claim
// any owner. A binding published before the owner was (an older
// controller) does not say; its update is read, within the bounds below.
//
// Every node list is read whole and bounded (nodelist.go): the user's
// ExcNodeList up to NodeListBound names; a longer one is not expanded at
// all, and gangtopo's nodes are appended to it as written ("user,ours",
// which Slurm reads as the union), so the cost of an update does not grow
// with what a user writes.
//
// What the record cannot follow: an update naming a node gangtopo
// excluded keeps it once in the list, but the decision still counts it as
// gangtopo's (job_modify cannot rewrite the AdminComment it does not
// see), so `gangtopo unbind --clear` takes it out with gangtopo's.

// Modification is an update of a job as job_modify sees it: who, which
// job, and the fields it sets (nil: not set; "" clears).
type Modification struct {
	UserID   uint32
	JobID    string // as the update names it: "123", "123_4", "123+1"
	Features *string
	ExcNodes *string
}

// KeepBinding is the answer about update m of a job with snapshot s's
// bindings: the fields to write instead of the user's, or Keep when
// gangtopo has no part in them or the caller is not the job's owner.
func KeepBinding(m Modification, s *occupancy.Snapshot) Result {
	b, ok, het := s.BindingOf(m.JobID)
	if !ok && !het {
		return Result{}
	}
	if owns, known := b.Owner(m.UserID); known && !owns {
		return Result{LogLevel: LogDebug, Log: fmt.Sprintf("update of job %s by uid %d passes as given: the job is uid %d's, and Slurm decides whether uid %d may update it",
			m.JobID, m.UserID, b.User, m.UserID)}
	}
	if het {
		msg := fmt.Sprintf("gangtopo: job %s is a heterogeneous job whose components gangtopo placed each on its own: update its features and excluded nodes one component at a time (JobId=%s+0, %s+1, ...)", m.JobID, m.JobID, m.JobID)
		return Result{Action: Reject, ErrMsg: msg, LogLevel: LogInfo, Log: fmt.Sprintf("update of job %s by uid %d refused: a whole heterogeneous job", m.JobID, m.UserID)}
	}
	out := Result{Action: Modify, LogLevel: LogInfo}
	var kept []string
	if m.Features != nil && b.Features != "" {
		f := WithBinding(*m.Features, b.Features)
		if len(f) > MaxFeaturesBytes {
			return Result{LogLevel: LogInfo, Log: fmt.Sprintf("update of job %s by uid %d passes as given: Features %q with gangtopo's %q would be %d bytes, over Slurm's %d",
				m.JobID, m.UserID, *m.Features, b.Features, len(f), MaxFeaturesBytes)}
		}
		out.Features = &f
		kept = append(kept, fmt.Sprintf("Features %q -> %q", *m.Features, f))
	}
	if m.ExcNodes != nil && b.Excluded != "" {
		x, err := keptExclusions(*m.ExcNodes, b.Excluded, NodeListBound(s.Cluster))
		if err != nil {
			return Result{LogLevel: LogInfo, Log: fmt.Sprintf("update of job %s by uid %d passes as given: ExcNodeList %q: %v", m.JobID, m.UserID, *m.ExcNodes, err)}
		}
		out.ExcNodes = &x
		kept = append(kept, fmt.Sprintf("ExcNodeList %q -> %q", *m.ExcNodes, x))
	}
	if len(kept) == 0 {
		return Result{}
	}
	out.Log = fmt.Sprintf("update of job %s by uid %d keeps gangtopo's binding: %s", m.JobID, m.UserID, strings.Join(kept, "; "))
	return out
}

// keptExclusions is the user's new ExcNodeList with gangtopo's nodes
// ours: the union, compressed, when the user's list reads within limit
// names; a longer one is left as written, ours appended after a comma
// (Slurm reads "a,b" as the union), so nothing is built from it. A list
// that is not a host list is an error: the update passes as given, and
// Slurm refuses it.
func keptExclusions(user, ours string, limit int) (string, error) {
	x, err := WithNodes(user, ours, limit)
	if errors.Is(err, hostlist.ErrTooMany) {
		if _, err := hostlist.ExpandAtMost(ours, limit); err != nil {
			return "", fmt.Errorf("gangtopo's exclusions %q: %w", ours, err)
		}
		return strings.TrimSpace(user) + "," + ours, nil
	}
	return x, err
}
