package queue

import "strings"

// AccountStats are one account's quota figures in a replay with
// Config.Quota.
type AccountStats struct {
	Account string
	Share   int
	// MeanHeld is the GPUs the account's running jobs held on average
	// over the submission window (requeued runs included).
	MeanHeld float64
	// OwnerJobs, P95OwnerWait, OwnerViolations: as Summary's, for the
	// account's jobs.
	OwnerJobs       int
	P95OwnerWait    float64
	OwnerViolations int
	// LostGPUHours is the run time of its jobs requeued by reclaims.
	LostGPUHours float64
}

// SummarizeAccounts breaks a quota replay down by account, in the shares'
// order (nil without a quota).
func SummarizeAccounts(r *Result) []AccountStats {
	if len(r.Shares) == 0 {
		return nil
	}
	out := make([]AccountStats, len(r.Shares))
	index := map[string]int{}
	for i, s := range r.Shares {
		out[i] = AccountStats{Account: s.Account, Share: s.GPUs}
		index[strings.ToLower(s.Account)] = i
	}
	var acc summaryAcc
	acc.init(r)
	held := func(a int, from, to float64, gpus int) {
		out[a].MeanHeld += max(0, min(to, acc.hi)-max(from, acc.lo)) * float64(gpus)
	}
	waits := make([][]float64, len(out))
	for i := range r.Jobs {
		a, ok := index[strings.ToLower(r.Jobs[i].Account)]
		o := &r.Outcomes[i]
		if !ok || o.Rejected || o.Cancelled {
			continue
		}
		held(a, o.Start, o.End, r.Jobs[i].GPUs)
		if o.Owner {
			w := o.Wait(&r.Jobs[i])
			waits[a] = append(waits[a], w)
			if w > r.OwnerBound+ownerSlack {
				out[a].OwnerViolations++
			}
		}
	}
	for _, q := range r.Requeues {
		if a, ok := index[strings.ToLower(r.Jobs[q.Job].Account)]; ok {
			held(a, q.Start, q.At, q.GPUs)
			out[a].LostGPUHours += float64(q.GPUs) * (q.At - q.Start) / 3600
		}
	}
	for a := range out {
		if span := acc.hi - acc.lo; span > 0 {
			out[a].MeanHeld /= span
		}
		out[a].OwnerJobs = len(waits[a])
		if len(waits[a]) > 0 {
			out[a].P95OwnerWait = p95(waits[a])
		}
	}
	return out
}
