// Package topotest holds named hardware and cluster fixtures: the test
// vocabulary of gangtopo. Each node fixture is built with explicit NVLink
// links, NUMA and PCIe facts as `nvidia-smi topo -m` reports them on that
// machine, so tests read like hardware ("a DGX-1 with GPUs 0-3 busy").
//
// It is an ordinary package (not _test) so every package's tests, the
// benchmarks and the simulator can share one set of fixtures.
package topotest
