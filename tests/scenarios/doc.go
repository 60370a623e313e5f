// Package scenarios runs the placement scenarios in this directory: each
// YAML file is a cluster (a file from docs/examples), an occupancy (busy
// GPUs, drained nodes), a request, and the placement or status expected.
// They are the engine's behaviour written as data; add a file to add a
// case. See scenario_test.go for the format.
package scenarios
