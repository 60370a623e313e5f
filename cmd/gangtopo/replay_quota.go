package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// GPU shares in the replay (issue 15): the trace's jobs run under a few
// accounts, each guaranteed a share of the cluster, kept three ways:
//
//	<policy>          no quota: the shares only measured against
//	<policy>+hard     Slurm's hard limits, each account's QOS at
//	                  GrpTRES=gres/gpu=<share>
//	<policy>+quota    gangtopo's dynamic quotas (docs/quota.md)
//
// The accounts come from the trace: Philly's jobs carry their virtual
// cluster (15 teams); those are dealt, largest first, to the account with
// the least GPU-time so far, so the accounts carry about equal work, and
// each account's share is its part of the GPU-time replayed (the shares
// sum to the cluster). With idle=PERIOD the account with the most work
// submits only in every other PERIOD of trace time (its other jobs are
// left out): a team idle half the time, with the share it was promised.
var quotaSuffixes = map[string]queue.QuotaMode{"+hard": queue.QuotaHard, "+quota": queue.QuotaDynamic}

// quotaPolicies are the base policies that may carry a quota suffix: the
// dynamic quota is gangtopo's controller, so only gangtopo's policies.
var quotaPolicies = map[string][]string{
	"+hard":  {"gangtopo", "gangtopo-slurm", "slurm", "slurm-flat"},
	"+quota": {"gangtopo", "gangtopo-slurm"},
}

// replayQuota is --quota's settings.
type replayQuota struct {
	accounts int
	idle     time.Duration // 0: no idle account
	// byNodes: each account's share is whole nodes, its static
	// partition's (shares=nodes); otherwise GPUs in proportion to its work.
	byNodes bool
	sim     queue.Quota
	// nodes is, by account rank, the nodes of its static partition: a
	// run of the cluster's nodes in order (Partitions).
	nodes [][]topology.NodeID
	desc  string // how a history's accounts got their shares (--sacct)
}

const replayQuotaKeys = "accounts, shares, idle, interval, requeue_delay, max_per_cycle, lend, borrow_max_gpu_hours"

// parseReplayQuota reads --quota: KEY=VALUE,... over the defaults (four
// accounts, none idle; the controller's cycle and gangtopo.yaml's
// quota: and defrag: defaults).
func parseReplayQuota(spec string) (*replayQuota, error) {
	q := &replayQuota{accounts: 4, sim: queue.Quota{Interval: controllerCycle, RequeueDelay: 30,
		MaxPerCycle: ctld.DefaultQuota().MaxPerCycle, Cost: ctld.DefaultDefrag().Cost}}
	if spec == "" || spec == "default" {
		return q, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, usagef("--quota %q: want KEY=VALUE,... (%s)", spec, replayQuotaKeys)
		}
		if err := q.set(k, v); err != nil {
			return nil, usagef("--quota %s: %v (keys: %s)", kv, err, replayQuotaKeys)
		}
	}
	return q, nil
}

func (q *replayQuota) set(k, v string) error {
	dur := func(min time.Duration) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err != nil || d < min {
			return 0, fmt.Errorf("want a duration of at least %s", min)
		}
		return d, nil
	}
	var err error
	var d time.Duration
	switch k {
	case "shares":
		if v != "gpus" && v != "nodes" {
			return fmt.Errorf("want gpus (in proportion to each account's work) or nodes (whole nodes, as its static partition)")
		}
		q.byNodes = v == "nodes"
	case "accounts":
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 16 {
			return fmt.Errorf("want a whole number from 1 to 16")
		}
		q.accounts = n
	case "idle":
		q.idle, err = dur(time.Hour)
	case "interval":
		d, err = dur(time.Second)
		q.sim.Interval = d.Seconds()
	case "requeue_delay":
		d, err = dur(0)
		q.sim.RequeueDelay = d.Seconds()
	case "max_per_cycle":
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 {
			return fmt.Errorf("want a whole number >= 1")
		}
		q.sim.MaxPerCycle = n
	case "lend":
		if v != "pack" && v != "anywhere" {
			return fmt.Errorf("want pack (borrowing jobs packed into the domains already lent, the default) or anywhere (placed as any other job: before issue 26)")
		}
		q.sim.LendAnywhere = v == "anywhere"
	case "borrow_max_gpu_hours":
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil || f < 0 || math.IsInf(f, 0) {
			return fmt.Errorf("want GPU-hours, 0 or more (0: no bound; gangtopo.yaml's quota.borrow_max_gpu_hours)")
		}
		q.sim.BorrowMaxGPUHours = f
	default:
		return fmt.Errorf("unknown key %q", k)
	}
	return err
}

// splitQuotaSuffix cuts a quota suffix off a policy name.
func splitQuotaSuffix(name string) (base string, mode queue.QuotaMode, ok bool) {
	for suf, m := range quotaSuffixes {
		if b, found := strings.CutSuffix(name, suf); found {
			return b, m, true
		}
	}
	return name, queue.QuotaOff, false
}

// validQuotaPolicy says whether name is a base policy with a quota suffix
// it may carry.
func validQuotaPolicy(name string) bool {
	for suf, bases := range quotaPolicies {
		if b, ok := strings.CutSuffix(name, suf); ok && slices.Contains(bases, b) {
			return true
		}
	}
	return false
}

// quotaAccount names the i-th account (0: the one with the most work).
func quotaAccount(i int) string { return "acct" + strconv.Itoa(i+1) }

// assignAccounts deals the trace's virtual clusters to q.accounts
// accounts (the most GPU-time first, each to the account with the least
// so far; ties by name), sets each job's account and the shares, and
// leaves out the idle account's jobs in every other period.
func (q *replayQuota) assignAccounts(kept []traces.Job, origin time.Time, c *topology.Cluster) ([]traces.Job, []string, error) {
	work := map[string]float64{}
	for _, j := range kept {
		work[j.Cluster] += j.Duration.Seconds() * float64(j.GPUs)
	}
	vcs := make([]string, 0, len(work))
	for vc := range work {
		vcs = append(vcs, vc)
	}
	sort.Slice(vcs, func(a, b int) bool {
		if work[vcs[a]] != work[vcs[b]] {
			return work[vcs[a]] > work[vcs[b]]
		}
		return vcs[a] < vcs[b]
	})
	if len(vcs) < q.accounts {
		return nil, nil, usagef("--quota accounts=%d: the trace window has only %d virtual clusters to make accounts of", q.accounts, len(vcs))
	}
	load := make([]float64, q.accounts)
	of := map[string]int{}
	for _, vc := range vcs {
		a := 0
		for i := range load {
			if load[i] < load[a] {
				a = i
			}
		}
		of[vc] = a
		load[a] += work[vc]
	}
	// account 0 is the one with the most work
	order := make([]int, q.accounts)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return load[order[a]] > load[order[b]] })
	rank := make([]int, q.accounts)
	for r, a := range order {
		rank[a] = r
	}
	if q.accounts > len(c.Nodes) {
		return nil, nil, usagef("--quota accounts=%d: the cluster has only %d nodes to give each account one", q.accounts, len(c.Nodes))
	}
	q.nodes = partitionNodes(load, order, c)
	q.sim.Shares = sharesOf(load, order, c.NumGPUs())
	if q.byNodes {
		for r := range q.sim.Shares {
			q.sim.Shares[r].GPUs = gpusOf(c, q.nodes[r])
		}
	}
	var out []traces.Job
	accounts := make([]string, 0, len(kept))
	for _, j := range kept {
		r := rank[of[j.Cluster]]
		if r == 0 && q.idle > 0 && int(j.Submit.Sub(origin)/q.idle)%2 == 1 {
			continue
		}
		out = append(out, j)
		accounts = append(accounts, quotaAccount(r))
	}
	return out, accounts, nil
}

// sharesOf splits the cluster's GPUs in proportion to the accounts' work
// (largest remainders get the rounding), in rank order; every account
// lends.
func sharesOf(load []float64, order []int, gpus int) quota.Shares {
	ranked := make([]float64, len(order))
	for r, a := range order {
		ranked[r] = load[a]
	}
	sh := make(quota.Shares, len(order))
	for r, g := range quota.Proportional(gpus, ranked) {
		sh[r] = quota.Share{Account: quotaAccount(r), GPUs: g, Lend: true}
	}
	return sh
}

// partitionNodes sizes each account's static partition in whole nodes:
// one each, the rest in proportion to the accounts' work (largest
// remainders), and gives them runs of the cluster's nodes in order, the
// account with the most work first (so the largest partitions fill whole
// leaves).
func partitionNodes(load []float64, order []int, c *topology.Cluster) [][]topology.NodeID {
	ranked := make([]float64, len(order))
	for r, a := range order {
		ranked[r] = load[a]
	}
	extra := quota.Proportional(len(c.Nodes)-len(order), ranked)
	out := make([][]topology.NodeID, len(order))
	next := topology.NodeID(0)
	for r := range out {
		for k := 0; k < 1+extra[r]; k++ {
			out[r] = append(out[r], next)
			next++
		}
	}
	return out
}

// gpusOf counts the GPUs of nodes.
func gpusOf(c *topology.Cluster, nodes []topology.NodeID) int {
	n := 0
	for _, id := range nodes {
		n += c.Nodes[id].NumGPUs()
	}
	return n
}

// describeQuota is the quota in one line, for the report's header.
func describeQuota(q *replayQuota) string {
	var parts []string
	for _, s := range q.sim.Shares {
		parts = append(parts, fmt.Sprintf("%s %d", s.Account, s.GPUs))
	}
	lend := "borrowing jobs packed into the domains already lent"
	if q.sim.LendAnywhere {
		lend = "borrowing jobs placed as any other"
	}
	if b := q.sim.BorrowMaxGPUHours; b > 0 {
		lend += fmt.Sprintf(", no job borrows whose GPUs x time limit exceed %s GPU-h", strconv.FormatFloat(b, 'f', -1, 64))
	}
	if q.desc != "" {
		return fmt.Sprintf("%s; +hard = GrpTRES at the share, +quota = dynamic quotas, controller cycle %s, requeue %s, at most %d reclaims a cycle, %s",
			q.desc, secs(q.sim.Interval), secs(q.sim.RequeueDelay), q.sim.MaxPerCycle, lend)
	}
	idle := "no account idle"
	if q.idle > 0 {
		idle = fmt.Sprintf("%s submits only in every other %s of trace time", quotaAccount(0), q.idle)
	}
	how := "shares in proportion to their GPU-time"
	if q.byNodes {
		how = "shares of whole nodes (one each, the rest in proportion to their GPU-time: their static partitions)"
	}
	return fmt.Sprintf("quotas: Philly's virtual clusters dealt to %d accounts, %s (%s GPUs), %s; "+
		"+hard = GrpTRES at the share, +quota = dynamic quotas, controller cycle %s, requeue %s, at most %d reclaims a cycle, %s; "+
		"an owner's job asked within its share, violated when it waited over %s",
		q.accounts, how, strings.Join(parts, ", "), idle, secs(q.sim.Interval), secs(q.sim.RequeueDelay), q.sim.MaxPerCycle, lend, secs(q.sim.Interval+q.sim.RequeueDelay))
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Targets of issue 15, dynamic quotas against the same path without
// quotas and with hard limits.
const (
	quotaTargetVsNone = -0.02 // utilisation at least no quotas' less 2 points
	quotaTargetVsHard = 0.15  // and 15 points above hard limits (a team idle half the time)
)

// quotaTable compares each policy's quota figures with its base.
func (r *replayReport) quotaTable() [][]string {
	if r.info.Quota == "" {
		return nil
	}
	byName := map[string]*queue.Summary{}
	for i := range r.rows {
		byName[r.rows[i].s.Policy] = &r.rows[i].s
	}
	t := [][]string{{"policy", "GPU util %", "vs no quotas pts", "vs hard limits pts", "owner jobs", "owner wait mean / p95 / max s",
		"violations", "reclaims", "requeues", "GPU-h lost to reclaim", "requeues / reclaim", "GPU-h lost / reclaim", "lost % of GPU-h run", "targets"}}
	for i := range r.rows {
		s := &r.rows[i].s
		base, mode, _ := splitQuotaSuffix(s.Policy)
		vsNone, vsHard, verdict := "-", "-", "-"
		none, hard := byName[base], byName[base+"+hard"]
		if none != nil && mode != queue.QuotaOff {
			vsNone = fmt.Sprintf("%+.1f", 100*(s.Util-none.Util))
		}
		if hard != nil && mode == queue.QuotaDynamic {
			vsHard = fmt.Sprintf("%+.1f", 100*(s.Util-hard.Util))
		}
		if mode == queue.QuotaDynamic {
			verdict = r.quotaVerdict(s, none, hard)
		}
		t = append(t, []string{s.Policy, replayPct(s.Util), vsNone, vsHard, strconv.Itoa(s.OwnerJobs),
			fmt.Sprintf("%s / %s / %s", ownerSecs(s.OwnerWait), ownerSecs(s.P95OwnerWait), ownerSecs(s.MaxOwnerWait)),
			strconv.Itoa(s.OwnerViolations), strconv.Itoa(s.QuotaReclaims), strconv.Itoa(s.Requeues),
			strconv.FormatFloat(s.LostGPUHours, 'f', 1, 64), perReclaim(float64(s.Requeues), s.QuotaReclaims, 2),
			perReclaim(s.LostGPUHours, s.QuotaReclaims, 2), strconv.FormatFloat(100*s.LostShare, 'f', 2, 64), verdict})
	}
	return t
}

// perReclaim is x per reclaim, "-" without reclaims: what one reclaim
// costs (issue 26: the jobs it requeues, the GPU-hours they lose).
func perReclaim(x float64, reclaims, prec int) string {
	if reclaims == 0 {
		return "-"
	}
	return strconv.FormatFloat(x/float64(reclaims), 'f', prec, 64)
}

// quotaVerdict says which targets a dynamic-quota row meets: no
// violation, owner p95 within the bound, utilisation within 2 points of
// no quotas, and (when an account idles) 15 points above hard limits.
func (r *replayReport) quotaVerdict(s, none, hard *queue.Summary) string {
	var out []string
	mark := func(name string, ok bool) {
		if ok {
			out = append(out, name+" met")
		} else {
			out = append(out, name+" MISSED")
		}
	}
	mark("violations 0", s.OwnerViolations == 0)
	mark("p95 <= bound", s.OwnerJobs == 0 || s.P95OwnerWait <= r.info.OwnerBound+1e-6)
	if none != nil {
		mark(">= none-2", s.Util-none.Util >= quotaTargetVsNone-1e-9)
	}
	if hard != nil && r.info.QuotaIdle {
		mark(">= hard+15", s.Util-hard.Util >= quotaTargetVsHard-1e-9)
	}
	return strings.Join(out, ", ")
}

func ownerSecs(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return strconv.FormatFloat(s, 'f', 0, 64)
}

// accountTable breaks the quota figures down by account: the share, the
// GPUs held on average over the submission window, the owners' jobs and
// their p95 wait, the violations.
func (r *replayReport) accountTable() [][]string {
	if r.info.Quota == "" || len(r.band.results) == 0 {
		return nil
	}
	t := [][]string{{"policy", "account", "share", "mean GPUs held", "held / share %", "owner jobs", "owner wait p95 s", "violations", "GPU-h lost"}}
	for _, res := range r.band.results {
		for _, a := range queue.SummarizeAccounts(res) {
			t = append(t, []string{res.Policy, a.Account, strconv.Itoa(a.Share), strconv.FormatFloat(a.MeanHeld, 'f', 0, 64),
				replayPct(a.MeanHeld / float64(max(a.Share, 1))), strconv.Itoa(a.OwnerJobs), ownerSecs(a.P95OwnerWait),
				strconv.Itoa(a.OwnerViolations), strconv.FormatFloat(a.LostGPUHours, 'f', 1, 64)})
		}
	}
	return t
}
