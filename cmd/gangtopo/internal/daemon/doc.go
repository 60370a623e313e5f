// Package daemon is the core every role of `gangtopo daemon` shares: the
// structured logger, the Prometheus registry and its HTTP endpoint, and the
// loop that runs a role's cycle (poll, build, publish) every interval.
//
// A role (controller, node) is a function that builds its state from the
// Daemon, registers its own metrics on Daemon.Registry, and hands Run its
// cycle. The loop owns timing and the generic bookkeeping: a cycle that
// fails is logged and counted, and the loop goes on; what the role last
// published stays in place. /healthz answers 200 while a cycle has
// succeeded within the last three intervals.
package daemon
