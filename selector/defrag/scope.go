package defrag

import "slices"

// Scope is the site's rule of which running jobs defragmentation may
// requeue at all (gangtopo.yaml's defrag: partitions, qos, accounts).
//
// A job is in scope when Slurm may requeue it (Job.Requeue: its own
// --requeue, never one submitted with --no-requeue) and it matches every
// list that is given: its partition is one of Partitions, its QOS one of
// QOS, its account one of Accounts. With no list given no job is in scope:
// a site names what may be requeued, nothing is by default.
type Scope struct {
	Partitions, QOS, Accounts []string
}

// Empty says no list is given: nothing may be requeued.
func (sc Scope) Empty() bool {
	return len(sc.Partitions) == 0 && len(sc.QOS) == 0 && len(sc.Accounts) == 0
}

// Allows says whether job j may be requeued under the scope.
func (sc Scope) Allows(j Job) bool {
	if !j.Requeue || sc.Empty() {
		return false
	}
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	return in(sc.Partitions, j.Partition) && in(sc.QOS, j.QOS) && in(sc.Accounts, j.Account)
}

// Why says in a few words why job j is out of scope ("" when it is in).
func (sc Scope) Why(j Job) string {
	switch {
	case !j.Requeue:
		return "Slurm may not requeue it (--no-requeue, or Requeue=0)"
	case sc.Empty():
		return "gangtopo.yaml's defrag: section names no preemptible partitions, QOS or accounts"
	case len(sc.Partitions) > 0 && !slices.Contains(sc.Partitions, j.Partition):
		return "its partition " + j.Partition + " is not in defrag.partitions"
	case len(sc.QOS) > 0 && !slices.Contains(sc.QOS, j.QOS):
		return "its QOS " + j.QOS + " is not in defrag.qos"
	case len(sc.Accounts) > 0 && !slices.Contains(sc.Accounts, j.Account):
		return "its account " + j.Account + " is not in defrag.accounts"
	}
	return ""
}
