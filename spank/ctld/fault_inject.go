//go:build gangtopo_faultinject

package ctld

import (
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

// Fault injection for the end-to-end tests (make plugins-fault builds
// libgangtopo with -tags gangtopo_faultinject). A job named
// gangtopo-inject-panic makes the engine call panic; one named
// gangtopo-inject-stall makes it outlive the deadline (Go answers at the
// deadline); one named gangtopo-inject-hang stalls the whole call for a
// second, so that the C shim stops waiting and the answer comes late. The
// product build has none of them.
func init() {
	submitHook = func(j jobsubmit.Job) {
		if j.Name == "gangtopo-inject-hang" {
			time.Sleep(time.Second)
		}
	}
	faultHook = func(j jobsubmit.Job) {
		switch j.Name {
		case "gangtopo-inject-panic":
			panic("injected fault: engine panic")
		case "gangtopo-inject-stall":
			time.Sleep(2 * time.Second)
		}
	}
}
