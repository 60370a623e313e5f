package traces

import (
	"fmt"
	"time"
)

// Job is one row of the Philly job table (philly-via-pollux/philly.csv).
type Job struct {
	Submit   time.Time
	Duration time.Duration
	GPUs     int
	Cluster  string // hashed virtual cluster id
	At       string // file:line
}

// phillyTime is the layout of the timestamp column.
const phillyTime = "2006-01-02 15:04:05"

// ReadPhilly reads the Philly job table (columns timestamp, duration,
// num_gpus, cluster; gpu_time is ignored, being duration x num_gpus).
func ReadPhilly(path string) ([]Job, error) {
	t, f, err := openTable(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := t.require("timestamp", "duration", "num_gpus", "cluster"); err != nil {
		return nil, err
	}
	var jobs []Job
	for {
		ok, err := t.next()
		if err != nil || !ok {
			if err == nil && len(jobs) == 0 {
				err = fmt.Errorf("%s: no jobs", path)
			}
			return jobs, err
		}
		j, err := t.job()
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
}

func (t *table) job() (Job, error) {
	j := Job{Cluster: t.str("cluster"), At: fmt.Sprintf("%s:%d", t.name, t.line)}
	ts := t.str("timestamp")
	submit, err := time.Parse(phillyTime, ts)
	if err != nil {
		return j, t.errorf("timestamp", "%q is not a time (want YYYY-MM-DD HH:MM:SS)", ts)
	}
	j.Submit = submit
	secs, err := t.float("duration", 0, 1e9)
	if err != nil {
		return j, err
	}
	j.Duration = time.Duration(secs * float64(time.Second))
	gpus, err := t.int("num_gpus", 1, 1<<20)
	if err != nil {
		return j, err
	}
	j.GPUs = int(gpus)
	return j, nil
}
