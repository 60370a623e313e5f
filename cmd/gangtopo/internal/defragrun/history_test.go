package defragrun

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/selector/defrag"
)

// The limits count what may have been done: a requeue that took, one
// whose command ran out of time (slurmctld may have done it), and one
// whose outcome was never written (actuate.Audit.Changes reads it as
// made); not one that Slurm refused. A gang counts as started by a plan
// once attached, or by a hold line of the format before the door.
func TestHistoryCountsWhatMayHaveBeenDone(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	changes := []actuate.Entry{
		{Time: at, Ref: "a", Action: "requeue", Job: "1", Result: "ok", LostGPUHours: 1},
		{Time: at, Ref: "b", Action: "requeue", Job: "2", Result: "scontrol requeue: no answer in time within 10s (slurmctld or slurmdbd busy or down?); killed", LostGPUHours: 2},
		{Time: at, Ref: "c", Action: "requeue", Job: "3", Result: "scontrol requeue: exit status 1: Job is not requeueable", LostGPUHours: 4},
		{Time: at, Ref: "d", Action: "attach", Job: "40", Gang: "40", Result: "ok", GPUs: 32},
		{Time: at, Ref: "e", Action: "attach", Job: "41", Gang: "41", Result: "Invalid job id specified", GPUs: 32},
		{Time: at, Action: "hold", Job: "42", Gang: "42", Result: "ok", GPUs: 32}, // before the door: no ref
		{Time: at, Ref: "f", Action: "hold", Job: "43", Gang: "43", Result: "ok", GPUs: 32},
	}
	h := History(changes)
	now := at.Add(time.Minute)
	l := defrag.Limits{Window: time.Hour, BudgetWindow: time.Hour}
	hour, lost := h.Spent(now, l)
	// requeues 1 and 2: 1 + 2 GPU-hours
	if hour != 2 || lost != 3 {
		t.Errorf("spent %d requeues, %g GPU-hours; want 2, 3", hour, lost)
	}
	var protected []string
	for _, j := range []string{"1", "2", "3", "40", "41", "42", "43"} {
		if h.Protected(j, now, l) {
			protected = append(protected, j)
		}
	}
	if diff := cmp.Diff([]string{"1", "2", "40", "42"}, protected); diff != "" {
		t.Errorf("protected (-want +got):\n%s", diff)
	}
}

func TestEpisodes(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	e := func(min int, action, job, gang, result, reason string) actuate.Entry {
		resv := ""
		if action != "pin" && action != "unpin" {
			resv = HoldPrefix + gang
		}
		return actuate.Entry{Time: at.Add(time.Duration(min) * time.Minute), Action: action, Job: job, Gang: gang,
			Reservation: resv, Result: result, Reason: reason, Duty: "defrag"}
	}
	changes := []actuate.Entry{
		e(0, "hold", "40", "40", "ok", ""),
		e(0, "attach", "40", "40", "ok", ""),
		e(0, "requeue", "12", "40", "ok", ""),
		e(0, "requeue", "13", "40", "Invalid job id specified", ""), // ended meanwhile: no failure
		e(3, "detach", "40", "40", "ok", ReasonRuns),
		e(3, "release", "", "40", "ok", ReasonRuns),
		e(5, "hold", "41", "41", "ok", ""),
		e(5, "attach", "41", "41", "ok", ""),
		e(5, "requeue", "14", "41", "Requested operation is presently disabled", ""),
		e(5, "abandon", "", "41", "ok", "the requeue of job 14 did not go through"),
		e(6, "pin", "42", "42", "ok", ""),
		e(21, "unpin", "42", "", "ok", "the pin expired and the job has not started"),
		e(22, "hold", "43", "43", "ok", ""), // still open
	}
	want := []Episode{
		{Gang: "40", Reservation: HoldPrefix + "40", At: at, Attached: true, Requeues: 2, Ended: true, EndAt: at.Add(3 * time.Minute), EndReason: ReasonRuns},
		{Gang: "41", Reservation: HoldPrefix + "41", At: at.Add(5 * time.Minute), Attached: true, Requeues: 1,
			Failed: "Requested operation is presently disabled", Ended: true, EndAt: at.Add(5 * time.Minute), EndReason: "the requeue of job 14 did not go through"},
		{Gang: "42", At: at.Add(6 * time.Minute), Pin: true, Ended: true, EndAt: at.Add(21 * time.Minute), EndReason: "the pin expired and the job has not started"},
		{Gang: "43", Reservation: HoldPrefix + "43", At: at.Add(22 * time.Minute)},
	}
	got := Episodes(changes)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var carried, started []bool
	for i := range got {
		carried, started = append(carried, got[i].Carried()), append(started, got[i].Started())
	}
	if diff := cmp.Diff([]bool{true, true, true, false}, carried); diff != "" {
		t.Errorf("carried (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, false, false, false}, started); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
}

// TestBackoff: base 10 min, cap 24 h. A plan that started its gang weighs
// 1, one that did not 2; the gang waits base x 2^(weight-1) after its
// last plan.
func TestBackoff(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	started := func(at time.Duration) Episode {
		return Episode{Gang: "40", At: t0.Add(at), Attached: true, Requeues: 1, Ended: true, EndReason: ReasonRuns}
	}
	failed := func(at time.Duration) Episode {
		return Episode{Gang: "40", At: t0.Add(at), Attached: true, Requeues: 1, Ended: true, EndReason: "the hold runs out and the gang has not started (Resources)"}
	}
	tests := []struct {
		name string
		eps  []Episode
		now  time.Duration
		want time.Duration // after t0; -1: none
	}{
		{"no plan", nil, 0, -1},
		{"a plan that requeued nothing (stale) does not count", []Episode{{Gang: "40", At: t0, Attached: true, Ended: true}}, 0, -1},
		{"another gang's plans do not count", []Episode{{Gang: "41", At: t0, Attached: true, Requeues: 1}}, 0, -1},
		// weight 1: 10 min
		{"one plan, open", []Episode{{Gang: "40", At: t0, Attached: true, Requeues: 1}}, time.Minute, 10 * time.Minute},
		{"one plan that started it", []Episode{started(0)}, time.Minute, 10 * time.Minute},
		// weight 2: 20 min
		{"one plan that did not start it", []Episode{failed(0)}, time.Minute, 20 * time.Minute},
		// weight 4, from the last (at 30 min): 30 + 80 = 110 min
		{"two that did not", []Episode{failed(0), failed(30 * time.Minute)}, 31 * time.Minute, 110 * time.Minute},
		// weight 6: 10 x 32 = 320 min after the last at 2 h
		{"three that did not", []Episode{failed(0), failed(time.Hour), failed(2 * time.Hour)}, 2 * time.Hour, 2*time.Hour + 320*time.Minute},
		// weight 20: capped at 24 h
		{"ten that did not: capped", func() []Episode {
			var eps []Episode
			for i := range 10 {
				eps = append(eps, failed(time.Duration(i)*time.Minute))
			}
			return eps
		}(), 10 * time.Minute, 9*time.Minute + 24*time.Hour},
		{"plans older than the cap are forgotten", []Episode{failed(0)}, 25 * time.Hour, -1},
		{"a preemption pin counts like a plan", []Episode{{Gang: "40", At: t0, Pin: true, Ended: true, EndReason: "the pin expired"}}, 0, 20 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Backoff(tt.eps, "40", 10*time.Minute, 24*time.Hour, t0.Add(tt.now))
			want := time.Time{}
			if tt.want >= 0 {
				want = t0.Add(tt.want)
			}
			if !got.Equal(want) {
				t.Errorf("backed off until %v, want %v", got, want)
			}
		})
	}
}

// TestFixable: the reasons a plan can fix are the waits for GPUs
// (slurm/slurm.h, enum job_state_reason, as job_state_reason_string names
// them); limits, holds, dependencies, times and the rest are not.
func TestFixable(t *testing.T) {
	tests := []struct {
		reason string
		want   bool
	}{
		{"Resources", true},
		{"Priority", true},
		{"ReqNodeNotAvail", true},
		{"NodeDown", true},
		{"None", false}, // not looked at yet
		{"", false},
		{"QOSGrpGRES", false},
		{"QOSMaxGRESPerUser", false},
		{"AssocGrpGRES", false},
		{"AssocMaxJobsLimit", false},
		{"MaxGRESPerAccount", false},
		{"Licenses", false},
		{"PartitionTimeLimit", false},
		{"PartitionNodeLimit", false},
		{"PartitionDown", false},
		{"Dependency", false},
		{"DependencyNeverSatisfied", false},
		{"JobHeldUser", false},
		{"JobHeldAdmin", false},
		{"BeginTime", false},
		{"JobArrayTaskLimit", false},
		{"BadConstraints", false},
		{"Constraints", false},
		{"Reservation", false},
		{"ReservationDeleted", false},
		{"resources", false}, // Slurm's names, exactly
	}
	for _, tt := range tests {
		if got := Fixable(tt.reason); got != tt.want {
			t.Errorf("Fixable(%q) = %v, want %v", tt.reason, got, tt.want)
		}
	}
}
