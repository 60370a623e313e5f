package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../c -DGT_ABI_NO_PROTOTYPES
#include <stdlib.h>
#include <string.h>
#include "gangtopo_abi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/gangtopo/gangtopo/spank/gate"
)

func main() {}

var (
	mu      sync.Mutex
	current *gate.Holder
	logs    = make(chan string, 64) // background reload messages, for gt_poll_log
)

//export gt_abi_version
func gt_abi_version() C.int { return C.GT_ABI_VERSION }

//export gt_init
func gt_init(path *C.char, errOut **C.char) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			setErr(errOut, fmt.Sprintf("internal error while loading: %v", r))
			rc = C.GT_ERR
		}
	}()
	p := gate.DefaultConfigPath
	if path != nil {
		p = C.GoString(path)
	} else if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
		p = env
	}
	h, err := gate.Open(p, queueLog)
	if err != nil {
		setErr(errOut, err.Error())
		return C.GT_ERR
	}
	mu.Lock()
	old := current
	current = h
	mu.Unlock()
	if old != nil {
		old.Close()
	}
	return C.GT_OK
}

//export gt_fini
func gt_fini() {
	defer func() { _ = recover() }()
	mu.Lock()
	old := current
	current = nil
	mu.Unlock()
	if old != nil {
		old.Close()
	}
}

//export gt_submit
func gt_submit(job *C.struct_gt_job, res *C.struct_gt_result) (rc C.int) {
	C.memset(unsafe.Pointer(res), 0, C.sizeof_struct_gt_result)
	defer func() {
		if r := recover(); r != nil {
			C.memset(unsafe.Pointer(res), 0, C.sizeof_struct_gt_result)
			res.log_level = C.GT_LOG_ERROR
			res.log = C.CString(fmt.Sprintf("internal error, job left as submitted: %v", r))
			rc = C.GT_ERR
		}
	}()
	mu.Lock()
	h := current
	mu.Unlock()
	if h == nil {
		return C.GT_OK // not configured: init logged why; jobs pass
	}
	out := h.Gate().Submit(goJob(job), time.Now())
	fill(res, out)
	if out.Decision.Verdict == gate.VerdictUntouched && out.LogLevel == gate.LogError {
		return C.GT_ERR
	}
	return C.GT_OK
}

//export gt_result_free
func gt_result_free(res *C.struct_gt_result) {
	defer func() { _ = recover() }()
	for _, p := range []**C.char{&res.log, &res.err_msg, &res.features, &res.prefer, &res.req_nodes, &res.exc_nodes,
		&res.tres_per_job, &res.tres_per_node, &res.comment, &res.admin_comment} {
		C.free(unsafe.Pointer(*p))
		*p = nil
	}
	C.memset(unsafe.Pointer(res), 0, C.sizeof_struct_gt_result)
}

//export gt_poll_log
func gt_poll_log() *C.char {
	select {
	case m := <-logs:
		return C.CString(m)
	default:
		return nil
	}
}

// queueLog keeps background reload messages for gt_poll_log: slurmctld's
// log functions are called from C only, on slurmctld's own thread.
func queueLog(msg string) {
	select {
	case logs <- msg:
	default: // full: drop rather than block the reloader
	}
}

func setErr(errOut **C.char, msg string) {
	if errOut != nil {
		*errOut = C.CString(msg)
	}
}

func str(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

func goJob(j *C.struct_gt_job) gate.Job {
	return gate.Job{
		UserID: uint32(j.user_id), Name: str(j.name), Partition: str(j.partition),
		GangTopology: str(j.gang_topology),
		TresPerJob:   str(j.tres_per_job), TresPerNode: str(j.tres_per_node),
		TresPerSocket: str(j.tres_per_socket), TresPerTask: str(j.tres_per_task),
		CPUsPerTres: str(j.cpus_per_tres), MemPerTres: str(j.mem_per_tres),
		Features: str(j.features), Prefer: str(j.prefer), ReqNodes: str(j.req_nodes), ExcNodes: str(j.exc_nodes),
		Comment:  str(j.comment),
		MinNodes: uint32(j.min_nodes), MaxNodes: uint32(j.max_nodes), NumTasks: uint32(j.num_tasks),
		NtasksPerNode: uint16(j.ntasks_per_node), CPUsPerTask: uint16(j.cpus_per_task),
		MinCPUs: uint32(j.min_cpus), PnMinMemory: uint64(j.pn_min_memory),
	}
}

func cstr(p *string) *C.char {
	if p == nil {
		return nil
	}
	return C.CString(*p)
}

func fill(res *C.struct_gt_result, out gate.Result) {
	res.action = C.int(out.Action)
	res.log_level = C.int(out.LogLevel)
	if out.Log != "" {
		res.log = C.CString(out.Log)
		if res.log_level == C.GT_LOG_NONE {
			res.log_level = C.GT_LOG_INFO
		}
	}
	if out.ErrMsg != "" {
		res.err_msg = C.CString(out.ErrMsg)
	}
	res.features, res.prefer = cstr(out.Features), cstr(out.Prefer)
	res.req_nodes, res.exc_nodes = cstr(out.ReqNodes), cstr(out.ExcNodes)
	res.tres_per_job, res.tres_per_node = cstr(out.TresPerJob), cstr(out.TresPerNode)
	res.min_nodes, res.max_nodes = C.uint32_t(out.MinNodes), C.uint32_t(out.MaxNodes)
	res.comment, res.admin_comment = cstr(out.Comment), cstr(out.AdminComment)
}
