//go:build !cgo

package discovery

// DefaultGPULib is Null in a build without cgo: go-nvml loads NVML through
// cgo, so such a gangtopo reports every node as CPU-only and says why.
func DefaultGPULib() GPULib {
	return Null{Reason: "gangtopo was built without cgo, so it cannot load NVML"}
}
