package defragrun

import (
	"strings"
	"time"
)

// Hold is one of gangtopo's reservations, as Slurm shows it.
type Hold struct {
	Name       string
	Nodes      string
	Start, End time.Time
	Users      string
	Flags      string
}

// Gang is the job a hold is for, from its name.
func (h Hold) Gang() string { return strings.TrimPrefix(h.Name, HoldPrefix) }

// reservationKeys are the keys of `scontrol -o show reservation` in the
// order Slurm writes them (src/api/reservation_info.c,
// slurm_sprint_reservation_info: 22.05.8, 24.11.5 and 26.05.3 alike; 26.05
// adds AllowedPartitions and QOS before Users, 22.05 prints Watts where
// later series do not, 24.11 adds Comment last; NodeName and CoreIDs
// repeat for a reservation of cores).
var reservationKeys = []string{"ReservationName", "StartTime", "EndTime", "Duration", "Nodes", "NodeCnt", "CoreCnt",
	"Features", "PartitionName", "Flags", "NodeName", "CoreIDs", "TRES", "AllowedPartitions", "QOS", "Users", "Groups",
	"Accounts", "Licenses", "State", "BurstBuffer", "Watts", "MaxStartDelay", "Comment"}

// ParseHolds reads `scontrol -o show reservation` (no JSON on 22.05): one
// reservation a line; only gangtopo's are returned.
//
// The fields are read as Slurm writes them, in their fixed order: a word
// starts a field only when its key comes later in reservationKeys than
// the field before it, so a value with blanks, or one that holds a
// "Key=" word (a Comment, which comes last), stays that field's. Only
// Slurm's administrators write a reservation's fields; gangtopo reads its
// own reservations' names, nodes, times and flags.
func ParseHolds(out string) []Hold {
	var holds []Hold
	for _, line := range strings.Split(out, "\n") {
		f := reservationFields(line)
		name := f["ReservationName"]
		if !strings.HasPrefix(name, HoldPrefix) {
			continue
		}
		h := Hold{Name: name, Nodes: f["Nodes"], Users: f["Users"], Flags: f["Flags"]}
		h.Start, _ = time.ParseInLocation("2006-01-02T15:04:05", f["StartTime"], time.Local)
		h.End, _ = time.ParseInLocation("2006-01-02T15:04:05", f["EndTime"], time.Local)
		holds = append(holds, h)
	}
	return holds
}

// reservationFields splits one line into its fields (see ParseHolds).
func reservationFields(line string) map[string]string {
	f := map[string]string{}
	at, key := -1, ""
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if i := keyIndex(k); i > at {
				at, key = i, k
				f[key] = v
				continue
			}
		}
		if key != "" {
			f[key] += " " + w
		}
	}
	return f
}

func keyIndex(k string) int {
	for i, rk := range reservationKeys {
		if rk == k {
			return i
		}
	}
	return -1
}
