// Package e2e drives a real Slurm 22.05 cluster (tests/slurmlab: 16 nodes x
// 8 GPUs, 4 leaves, 2 spines) with the gangtopo plugins loaded and asserts
// what Slurm did. One file per feature; the invalid-input cases are
// gathered in invalid_test.go. The lab is set up as a cluster is deployed
// (docs/admin.md, "Deploying on a cluster", whose commands deploy_test.go
// runs): node-local node file directories, a default partition that the
// tests' jobs use without -p, a partition outside the cluster file and one
// outside gangtopo.yaml's partitions (main_test.go).
//
// Each file registers its tests (register, registry_test.go); TestE2E runs
// them all, one subtest each under the lab's Slurm release, so a test's
// name says which Slurm it ran on: TestE2E/slurm-22.05.8/GangStaysInOneLeaf.
//
// It runs only when GANGTOPO_E2E=1 (make e2e sets it, with the plugin
// build directories in GANGTOPO_PLUGINS and GANGTOPO_FAULT_PLUGINS and the
// gangtopo binary in GANGTOPO_BIN) and needs root. make e2e skips it for a
// non-root user outside CI; under CI=true it always runs.
package e2e
