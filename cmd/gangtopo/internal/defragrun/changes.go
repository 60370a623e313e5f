package defragrun

import (
	"strconv"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
)

// The changes a plan makes in Slurm, each one actuate.Change for the door
// (actuate.Door.Do: leader, audit line first, limits, back-off), with the
// audit line's content: the gang, its reservation and domain, and for each
// job its GPUs, nodes, the GPU-hours it loses and its cost.

// HoldFlags are the reservation's flags (Slurm 22.05 to 26.05 alike,
// src/slurmctld/reservation.c and job_mgr.c):
//
//   - IGNORE_JOBS: the reservation is made on nodes where the jobs about
//     to be requeued still run;
//   - FLEX: when the reservation ends with the gang running inside it,
//     slurmctld does not end the gang (job_time_limit's "Reservation
//     ended for" kill skips FLEX reservations), and purges the
//     reservation with the gang still running (job_resv_check);
//   - NO_HOLD_JOBS_AFTER_END: when it ends, or is deleted, with the gang
//     still pending in it, the gang is not held (without it: priority 0,
//     state RESV_DEL_HOLD, "Reservation ... was deleted", until an
//     administrator releases it).
//
// FLEX also lets the gang start on nodes outside the reservation, and
// before or after its times; Slurm tries the reservation's nodes first
// (node_scheduler.c's IN_FL and OUT_FL node sets). The gang's own gangtopo
// binding still keeps it inside one domain of its tier, and other jobs
// are kept off the held nodes as before: what FLEX loosens is only where
// inside its domains the gang may start. Without FLEX, a gang running in
// a hold whose controller stalled or died would be killed at the hold's
// end; so the running gang is also taken out promptly (Tend).
const HoldFlags = "IGNORE_JOBS,FLEX,NO_HOLD_JOBS_AFTER_END"

// duty names defragmentation in the audit log.
const duty = "defrag"

// holdChange makes the reservation: nodes for user, lasting d (whole
// minutes, at least one), from now.
func holdChange(e actuate.Entry, name, nodes, user string, d time.Duration) actuate.Change {
	mins := max(int((d+time.Minute-1)/time.Minute), 1)
	e.Action, e.Reservation, e.Duty = "hold", name, duty
	return actuate.Change{Entry: e, Cmd: "scontrol", Args: []string{"create", "reservation", "ReservationName=" + name,
		"StartTime=now", "Duration=" + strconv.Itoa(mins), "Nodes=" + nodes, "Users=" + user, "Flags=" + HoldFlags}}
}

// attachChange puts the pending gang in the reservation.
func attachChange(e actuate.Entry, gang, name string) actuate.Change {
	e.Action, e.Job, e.Reservation, e.Duty = "attach", gang, name, duty
	return actuate.Change{Entry: e, Cmd: "scontrol", Args: []string{"update", "JobId=" + gang, "ReservationName=" + name}}
}

// requeueChange requeues a running job.
func requeueChange(e actuate.Entry, job string) actuate.Change {
	e.Action, e.Job, e.Duty = "requeue", job, duty
	return actuate.Change{Entry: e, Cmd: "scontrol", Args: []string{"requeue", job}}
}

// expediteChange makes a requeued job eligible now (StartTime=now).
func expediteChange(e actuate.Entry, job string) actuate.Change {
	e.Action, e.Job, e.Duty = "expedite", job, duty
	return actuate.Change{Entry: e, Cmd: "scontrol", Args: []string{"update", "JobId=" + job, "StartTime=now"}}
}

// detachChange takes the gang (pending or running) out of its
// reservation: it puts back what attach did.
func detachChange(e actuate.Entry, gang string) actuate.Change {
	e.Action, e.Job, e.Duty = "detach", gang, duty
	return actuate.Change{Entry: e, Cmd: "scontrol", Args: []string{"update", "JobId=" + gang, "ReservationName="}, Undo: true}
}

// endChange deletes the reservation; action is release (the hold is
// done) or abandon (the plan was given up).
func endChange(e actuate.Entry, action, name string) actuate.Change {
	e.Action, e.Reservation, e.Duty = action, name, duty
	return actuate.Change{Entry: e, Cmd: "scontrol", Args: []string{"delete", "ReservationName=" + name}, Undo: true}
}
