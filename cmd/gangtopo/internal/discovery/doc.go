// Package discovery finds what a GPU node has, for gangtopo's node daemon:
// its GPUs (through NVML), how they are joined (NVLink, NVSwitch, PCIe),
// the multi-node NVLink fabric they belong to, and its RDMA NICs (from
// sysfs), and writes the result as a versioned JSON node map; it also
// builds the per-node file that the SPANK plugin reads for NCCL_IB_HCA
// (BuildNodeFile; the format and its renderer are spank/nodefile's).
//
// Hardware sits behind narrow interfaces owned by this package: GPULib and
// GPUDevice describe the few NVML facts discovery needs, in plain Go types.
// NVML adapts a go-nvml nvml.Interface to them (the real driver by default,
// go-nvml's mock servers in tests); Null stands in on hosts without NVML or
// GPUs, so a CPU-only host is reported as such and is not an error. NICs,
// PCI paths and host facts are read from a sysfs tree whose root is a
// parameter, so tests run on fake trees under testdata/.
//
// The interpretation lives here, not in the adapters: which NVLink ends are
// GPUs and which are NVSwitches (nvlink.go), which GPUs share a PCIe switch
// and which NIC is nearest to each GPU (pci.go, nic.go).
package discovery
