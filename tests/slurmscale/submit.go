package slurmscale

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// submitWorkers is how many sbatch processes run at once: enough to keep
// slurmctld's RPC threads busy on a small machine (the throughput
// benchmark's choice, tests/slurmbench).
const submitWorkers = 8

// submitted is one job Slurm accepted.
type submitted struct {
	ID   string
	Kind Kind
	GPUs int
	Jobs int
}

// submitAll submits jobs with submitWorkers sbatch processes at a time, in
// order of the slice as far as the workers allow, and returns what Slurm
// accepted and the wall time. Refusals are counted, not fatal (a job a
// limit refuses is the workload's, not the lab's failure), up to a tenth
// of the jobs.
func submitAll(ctx context.Context, lab *slurmlab.Lab, jobs []Job) ([]submitted, time.Duration, error) {
	out := make([]submitted, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < submitWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id, err := sbatch(ctx, lab, jobs[i].args)
				out[i], errs[i] = submitted{ID: id, Kind: jobs[i].Kind, GPUs: jobs[i].GPUs, Jobs: jobs[i].Jobs}, err
			}
		}()
	}
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	wall := time.Since(t0)
	var ok []submitted
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		ok = append(ok, out[i])
	}
	if err := ctx.Err(); err != nil {
		return ok, wall, err
	}
	if len(failed) > len(jobs)/10 {
		return ok, wall, fmt.Errorf("%d of %d submissions refused, e.g. %s", len(failed), len(jobs), failed[0])
	}
	return ok, wall, nil
}

// ids joins the job IDs of jobs for scancel.
func ids(jobs []submitted) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// cancel cancels jobs by ID, 500 an scancel call. With --ctld, Slurm
// 23.11 and later send slurmctld one request for all of them (26.05.5's
// scancel without it sends one RPC a job and paces them while slurmctld is
// busy, which took many minutes at 1,024 nodes); 22.05 sends one RPC a
// job either way. On a loaded machine some time out ("Socket timed out on
// send/recv operation", seen with three labs on 2 cores) while the rest go
// through, so a call that timed out is made again, up to cancelTries times
// (a job already cancelled is then an invalid or completing one, which is
// fine). A call --ctld refuses otherwise is made again without it.
func cancel(ctx context.Context, lab *slurmlab.Lab, jobIDs []string) error {
	for len(jobIDs) > 0 {
		n := min(500, len(jobIDs))
		if err := cancelBatch(ctx, lab, jobIDs[:n]); err != nil {
			return err
		}
		jobIDs = jobIDs[n:]
	}
	return nil
}

// cancelBatch cancels up to 500 jobs: the list in one `scancel --ctld`,
// each job on its own when slurmctld refuses the list as a whole, and
// what is left again, a few times with pauses between, while slurmctld
// is too busy to answer (Socket timed out).
func cancelBatch(ctx context.Context, lab *slurmlab.Lab, ids []string) error {
	var err error
	for try := 1; ; try++ {
		_, err = lab.Run(ctx, cancelTimeout(len(ids)), "scancel", append([]string{"--ctld"}, ids...)...)
		if err != nil && !cancelled(err.Error()) && !strings.Contains(err.Error(), "Socket timed out") {
			// 26.05.5 refused a whole list at once ("slurm_kill_jobs:
			// Unable to signal jobs: Operation not permitted", after a
			// 180 s window in which many of the backlog's jobs started):
			// each job on its own then, one RPC each, whose complaints
			// name the jobs
			_, err = lab.Run(ctx, cancelTimeout(len(ids)), "scancel", ids...)
		}
		if err == nil || cancelled(err.Error()) {
			return nil
		}
		if try == cancelTries || !strings.Contains(err.Error(), "Socket timed out") {
			return err
		}
		// 26.05.5 at 512 nodes: the per-job scancel of 500 jobs timed
		// out on some while slurmctld paced its RPCs; the rest is
		// cancelled again once it has caught up
		time.Sleep(time.Duration(try) * 5 * time.Second)
		if left, lerr := alive(ctx, lab, ids); lerr == nil {
			if len(left) == 0 {
				return nil
			}
			ids = left
		}
	}
}

// alive are the jobs of ids Slurm still has pending or running.
func alive(ctx context.Context, lab *slurmlab.Lab, ids []string) ([]string, error) {
	out, err := lab.Run(ctx, cancelTimeout(len(ids)), "squeue", "-h", "-o", "%i", "--states=PENDING,RUNNING,CONFIGURING,SUSPENDED",
		"--jobs="+strings.Join(ids, ","))
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

const cancelTries = 3

// cancelTimeout bounds one scancel of n jobs: 26.05.5's scancel paces its
// RPCs when slurmctld is busy ("adding delay in RPC send of 1000000
// usec"), and 500 jobs at the 1,024-node lab's load outlasted 2 minutes.
func cancelTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*time.Second }

// cancelled says whether scancel's complaints are only about jobs that
// are gone or going already.
func cancelled(msg string) bool {
	return !strings.Contains(msg, "Socket timed out") &&
		(strings.Contains(msg, "Invalid job id") || strings.Contains(msg, "already completing or completed"))
}

// sbatchTimeout is how long one sbatch may take: on a 2-core machine at a
// load of 40 (the 1,024-node lab's), sbatch's own process start and munge
// took over the lab's 15 s while slurmctld answered each submission in
// under 2 ms (sdiag).
const sbatchTimeout = 90 * time.Second

// sbatch submits one job and returns its ID.
func sbatch(ctx context.Context, lab *slurmlab.Lab, args []string) (string, error) {
	out, errOut, err := lab.RunSplit(ctx, sbatchTimeout, nil, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";") // "ID;cluster"
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job ID", out)
	}
	return id, nil
}
