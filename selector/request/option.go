package request

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Option is a parsed --gang-topology value.
type Option struct {
	Tier  topology.Tier
	Mode  Mode
	Slice int
}

// MaxSlice bounds slice=S (the largest NVLink domains today hold 72 GPUs;
// 576 leaves room for NVL576).
const MaxSlice = 576

// ParseOption reads TIER[:MODE][,slice=S], the grammar of --gang-topology
// and GANGTOPO_TOPOLOGY: TIER is one of nvlink, node, block, leaf, spine,
// any; MODE is required (the default) or preferred. Errors name the part
// that is wrong and list what is allowed, and are meant to be shown to the
// user as they are, after a "--gang-topology: " prefix. The part is quoted
// (%q): the value is the user's, and slurmctld logs the message, so a
// newline in it must not start a forged log line.
func ParseOption(s string) (Option, error) {
	var o Option
	s = strings.TrimSpace(s)
	if s == "" {
		return o, fmt.Errorf("empty value (want TIER[:MODE][,slice=S], e.g. leaf or nvlink:preferred,slice=8)")
	}
	parts := strings.Split(s, ",")
	tierMode := parts[0]
	tierName, modeName, hasMode := strings.Cut(tierMode, ":")
	t, err := topology.ParseTier(tierName)
	if err != nil {
		return o, err
	}
	o.Tier = t
	if hasMode {
		modeName = strings.TrimSpace(modeName)
		switch strings.ToLower(modeName) {
		case "required":
			o.Mode = Required
		case "preferred":
			o.Mode = Preferred
		default:
			return o, fmt.Errorf("unknown mode %q (want required or preferred)", modeName)
		}
	}
	for _, p := range parts[1:] {
		if err := o.parseKey(p); err != nil {
			return o, err
		}
	}
	return o, nil
}

func (o *Option) parseKey(p string) error {
	p = strings.TrimSpace(p)
	key, val, ok := strings.Cut(p, "=")
	if !ok || strings.TrimSpace(key) != "slice" {
		return fmt.Errorf("unknown setting %q (the only setting is slice=S)", p)
	}
	if o.Slice != 0 {
		return fmt.Errorf("slice given twice")
	}
	n, err := strconv.Atoi(strings.TrimSpace(val))
	if err != nil || n < 1 || n > MaxSlice {
		return fmt.Errorf("slice=%q is not a GPU count (want 1..%d)", val, MaxSlice)
	}
	o.Slice = n
	return nil
}

// String renders the option in its canonical form; "" for no option.
func (o Option) String() string {
	if o.Tier == 0 {
		return "" // no option: a job without GPUs under jobs: all
	}
	s := o.Tier.String() + ":" + o.Mode.String()
	if o.Slice > 0 {
		s += ",slice=" + strconv.Itoa(o.Slice)
	}
	return s
}

// Apply copies the option into a request.
func (o Option) Apply(r *Request) {
	r.Tier, r.Mode, r.Slice = o.Tier, o.Mode, o.Slice
}
