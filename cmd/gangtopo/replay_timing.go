package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// sacctTiming is the scheduler timing a history replays with (--timing):
// none for events; the site's own from --scontrol-config (the output of
// `scontrol show config`: SchedulerType, SchedulerParameters, BOOT_TIME);
// else Slurm's defaults with slurmctld started at the first job.
func (o *replayOptions) sacctTiming(origin time.Time) (*queue.Timing, string, error) {
	switch o.timing {
	case "events":
		return nil, "scheduling passes at every event (--timing events)", nil
	case "slurm", "easy":
	default:
		return nil, "", usagef("--timing %q: want slurm, easy or events", o.timing)
	}
	t, from := queue.DefaultTiming(0), "Slurm's defaults (no --scontrol-config), slurmctld started at the first job"
	if o.scontrolConfig != "" {
		var boot time.Time
		var err error
		if t, boot, err = readSchedConfig(o.scontrolConfig, origin); err != nil {
			return nil, "", err
		}
		from = fmt.Sprintf("from %s, slurmctld started %s", replayDisplayPath(o.scontrolConfig), boot.Format(time.DateTime))
	}
	t.Epoch, t.EASY = float64(origin.Unix()), o.timing == "easy"
	return &t, describeTiming(t, from), nil
}

func describeTiming(t queue.Timing, from string) string {
	bf := fmt.Sprintf("bf_interval=%g s", t.BackfillInterval)
	if math.IsInf(t.BackfillInterval, 1) {
		bf = "no backfill (sched/builtin)"
	}
	kind := fmt.Sprintf("Slurm's backfill (a reservation for each of up to %d jobs tested, bf_resolution=%g s)", t.MaxJobTest, t.Resolution)
	if t.EASY {
		kind = "EASY backfill (--timing easy)"
	}
	return fmt.Sprintf("slurmctld's scheduling times: batch_sched_delay=%g s, sched_interval=%g s, %s, %s (%s)",
		t.BatchSchedDelay, t.SchedInterval, bf, kind, from)
}

// readSchedConfig reads the scheduler's settings from `scontrol show
// config` output. Times in it are local wall-clock, read as UTC as sacct
// -P's are.
func readSchedConfig(path string, origin time.Time) (queue.Timing, time.Time, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return queue.Timing{}, time.Time{}, usagef("--scontrol-config %s does not exist", path)
	}
	if err != nil {
		return queue.Timing{}, time.Time{}, err
	}
	defer f.Close()
	kv := map[string]string{}
	line := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			k = strings.TrimSpace(k)
			kv[k], line[k] = strings.TrimSpace(v), n
		}
	}
	if err := sc.Err(); err != nil {
		return queue.Timing{}, time.Time{}, fmt.Errorf("%s: %w", path, err)
	}
	bad := func(k, format string, a ...any) error {
		return usagef("%s:%d: %s: %s", path, line[k], k, fmt.Sprintf(format, a...))
	}
	bootText, ok := kv["BOOT_TIME"]
	if !ok {
		return queue.Timing{}, time.Time{}, usagef("%s: no BOOT_TIME: not the output of scontrol show config", path)
	}
	boot, err := time.Parse("2006-01-02T15:04:05", bootText)
	if err != nil {
		return queue.Timing{}, time.Time{}, bad("BOOT_TIME", "%q is not a time (want YYYY-MM-DDTHH:MM:SS)", bootText)
	}
	t := queue.DefaultTiming(boot.Sub(origin).Seconds())
	switch st := kv["SchedulerType"]; st {
	case "sched/backfill", "":
	case "sched/builtin":
		t.BackfillInterval = math.Inf(1)
	default:
		return t, boot, bad("SchedulerType", "%q: the replay models sched/backfill and sched/builtin", st)
	}
	return t, boot, schedParams(&t, kv["SchedulerParameters"], func(format string, a ...any) error {
		return bad("SchedulerParameters", format, a...)
	})
}

// schedParams takes the parameters the timing uses from
// SchedulerParameters; the others do not change when passes run.
func schedParams(t *queue.Timing, params string, bad func(string, ...any) error) error {
	if params == "" || params == "(null)" {
		return nil
	}
	for _, p := range strings.Split(params, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		var dst *float64
		switch k {
		case "batch_sched_delay":
			dst = &t.BatchSchedDelay
		case "sched_interval":
			dst = &t.SchedInterval
		case "bf_interval":
			dst = &t.BackfillInterval
		case "bf_resolution":
			dst = &t.Resolution
		case "bf_max_job_test":
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 {
				return bad("%s=%q: want a whole number >= 1", k, v)
			}
			t.MaxJobTest = n
			continue
		default:
			continue
		}
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n == 0 && k != "batch_sched_delay" {
			return bad("%s=%q: want whole seconds (at least 1; batch_sched_delay 0 or more)", k, v)
		}
		*dst = float64(n)
	}
	return nil
}
