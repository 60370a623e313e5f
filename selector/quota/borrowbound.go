package quota

import "time"

// OverBorrowBound says whether a job of gpus GPUs and time limit limit
// may not borrow under a bound of maxGPUHours (quota.borrow_max_gpu_hours;
// 0: no bound).
//
// Why a bound: a reclaim requeues borrowed jobs, and what a requeued job
// loses is the work it did since it started (or since its last
// checkpoint, which gangtopo cannot see), at most its GPUs times its time
// limit. Large, long borrowed gangs are where reclaims lose most (in the
// quota replay of docs/benchmarks.md, one account's long gangs lost most
// of the GPU-hours reclaims cost): a job whose GPUs x time limit exceeds
// the bound waits for its own account's share instead of running
// preemptible on lent GPUs. A job without a time limit (Slurm's
// INFINITE, limit <= 0) could lose any amount, so under a bound it never
// borrows.
func OverBorrowBound(maxGPUHours float64, gpus int, limit time.Duration) bool {
	if maxGPUHours <= 0 {
		return false
	}
	return limit <= 0 || float64(gpus)*limit.Hours() > maxGPUHours
}
