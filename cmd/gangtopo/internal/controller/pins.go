package controller

import (
	"context"
	"errors"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// expirePins undoes the pins gangtopo made (actuate.Pins: the marked
// pending jobs, whoever made them, this controller before a restart or
// another before a failover) that expired, or whose duty is off now:
// quota off, pin_preemption off, or actions switched off. The door
// refuses nothing here but its own limits: undoing is what switching off
// means. offWhy, when set, is why the pins are put back while actions are
// off (Withdraw: the controller stops for good).
func (c *Controller) expirePins(ctx context.Context, st *slurmstate.State, cfg ctld.Config, now time.Time, offWhy string) {
	off := c.duties.door.Off()
	for _, p := range actuate.Pins(st.Queued) {
		why := ""
		switch {
		case off && offWhy != "":
			why = offWhy + ": the pin is put back"
		case off:
			why = "actions are switched off: the pin is put back"
		case p.Expired(now):
			why = "the pin expired (" + p.Until.UTC().Format(time.RFC3339) + ") and the job has not started"
		case p.By == "quota" && !cfg.Quota.Enabled:
			why = "quotas are off (quota.enabled: false): the reclaim pin is put back"
		case p.By == "defrag" && !cfg.Defrag.PinPreemption:
			why = "defrag.pin_preemption is off: the pin is put back"
		default:
			continue
		}
		_, err := c.duties.door.Do(ctx, p.Undo(p.By, why))
		if p.By == "quota" && c.quota != nil {
			c.quota.released(p, why, err)
		}
		if errors.Is(err, actuate.ErrBusy) || errors.Is(err, actuate.ErrLimit) {
			return
		}
	}
}
