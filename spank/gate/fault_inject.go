//go:build gangtopo_faultinject

package gate

import "time"

// Fault injection for the end-to-end tests (make plugins-fault builds
// libgangtopo with -tags gangtopo_faultinject). A job named
// gangtopo-inject-panic makes the engine call panic; one named
// gangtopo-inject-stall makes it outlive the deadline. The product build
// has neither.
func init() {
	faultHook = func(j Job) {
		switch j.Name {
		case "gangtopo-inject-panic":
			panic("injected fault: engine panic")
		case "gangtopo-inject-stall":
			time.Sleep(2 * time.Second)
		}
	}
}
