package main

/*
#include <stdlib.h>
#include "gangtopo_abi.h"
*/
import "C"

import (
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The C memory of the protocol: the shim's job blocks read here, the result
// and parameter blocks made here. Each is one malloc()ed block, so that
// whoever releases it needs one free() and knows nothing of its layout.

func str(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p) // a copy, in Go memory
}

// goJob copies a job out of the shim's block.
func goJob(j *C.struct_gt_job) jobsubmit.Job {
	return jobsubmit.Job{
		UserID: uint32(j.user_id), Name: str(j.name), Partition: str(j.partition),
		DefaultPartition: str(j.default_partition),
		GangTopology:     str(j.gang_topology), GangTopologyFromEnv: j.gang_topology_from_env != 0,
		TresPerJob: str(j.tres_per_job), TresPerNode: str(j.tres_per_node),
		TresPerSocket: str(j.tres_per_socket), TresPerTask: str(j.tres_per_task),
		CPUsPerTres: str(j.cpus_per_tres), MemPerTres: str(j.mem_per_tres),
		Features: str(j.features), Prefer: str(j.prefer), ReqNodes: str(j.req_nodes), ExcNodes: str(j.exc_nodes),
		Comment: str(j.comment), AdminComment: str(j.admin_comment),
		MinNodes: uint32(j.min_nodes), MaxNodes: uint32(j.max_nodes), NumTasks: uint32(j.num_tasks),
		NtasksPerNode: uint16(j.ntasks_per_node), CPUsPerTask: uint16(j.cpus_per_task),
		MinCPUs: uint32(j.min_cpus), PnMinMemory: uint64(j.pn_min_memory),
		ArrayInx: str(j.array_inx), HetJob: j.het_job != 0, HetOffset: uint32(j.het_job_offset),
		SegmentSize: uint32(j.segment_size),
		Overcommit:  j.overcommit != 0, Shared: sharing(j.shared), MemWholeNode: j.mem_whole_node != 0,
		Contiguous: j.contiguous != 0, SpreadJob: j.spread_job != 0, ReqSwitch: uint32(j.req_switch),
		PnMinCPUs: uint16(j.pn_min_cpus), NtasksPerTres: uint16(j.ntasks_per_tres),
		ThreadsPerCore: uint16(j.threads_per_core), NtasksPerCore: uint16(j.ntasks_per_core),
		SocketsPerNode: uint16(j.sockets_per_node), CoresPerSocket: uint16(j.cores_per_socket),
		NtasksPerSocket: uint16(j.ntasks_per_socket),
	}
}

// sharing reads the ABI's enum gt_shared.
func sharing(v C.uint32_t) jobsubmit.Sharing {
	switch v {
	case C.GT_SHARED_DEFAULT:
		return jobsubmit.SharedDefault
	case C.GT_SHARED_EXCLUSIVE:
		return jobsubmit.SharedExclusive
	case C.GT_SHARED_OVERSUBSCRIBE:
		return jobsubmit.SharedOversubscribe
	case C.GT_SHARED_USER:
		return jobsubmit.SharedUser
	case C.GT_SHARED_MCS:
		return jobsubmit.SharedMCS
	case C.GT_SHARED_TOPO:
		return jobsubmit.SharedTopo
	}
	return jobsubmit.SharedOther
}

// goModification copies an update out of the shim's block (GT_REQ_MODIFY):
// the changes bits say which fields it sets, "" included.
func goModification(j *C.struct_gt_job) jobsubmit.Modification {
	m := jobsubmit.Modification{UserID: uint32(j.user_id), JobID: str(j.job_id)}
	if j.changes&C.GT_CHANGE_FEATURES != 0 {
		f := str(j.features)
		m.Features = &f
	}
	if j.changes&C.GT_CHANGE_EXC_NODES != 0 {
		x := str(j.exc_nodes)
		m.ExcNodes = &x
	}
	return m
}

// block lays out a struct followed by its NUL-terminated strings in one
// malloc()ed block: size the strings with add, then allocate and copy.
type block struct {
	base   unsafe.Pointer
	size   uintptr
	filled uintptr
}

func (b *block) add(s *string) {
	if s != nil {
		b.size += uintptr(len(*s)) + 1
	}
}

func (b *block) alloc(head uintptr) unsafe.Pointer {
	b.size += head
	b.base = C.malloc(C.size_t(b.size)) // cgo's malloc never returns nil
	clear(unsafe.Slice((*byte)(b.base), b.size))
	b.filled = head
	return b.base
}

// put copies s into the block: nil stays NULL, "" becomes an empty string.
func (b *block) put(s *string) *C.char {
	if s == nil {
		return nil
	}
	p := unsafe.Add(b.base, b.filled)
	copy(unsafe.Slice((*byte)(p), len(*s)), *s) // the NUL is there: alloc cleared the block
	b.filled += uintptr(len(*s)) + 1
	return (*C.char)(p)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// packResult makes the answer block: struct gt_result, then its strings.
func packResult(out jobsubmit.Result, background *string) *C.struct_gt_result {
	logLevel := out.LogLevel
	if out.Log != "" && logLevel == jobsubmit.LogNone {
		logLevel = jobsubmit.LogInfo
	}
	strs := []*string{nonEmpty(out.Log), nonEmpty(out.ErrMsg), out.Features, out.Prefer, out.ReqNodes,
		out.ExcNodes, out.TresPerJob, out.TresPerNode, out.Comment, out.AdminComment, background}
	var b block
	for _, s := range strs {
		b.add(s)
	}
	r := (*C.struct_gt_result)(b.alloc(C.sizeof_struct_gt_result))
	r.action, r.log_level = C.int(out.Action), C.int(logLevel)
	for i, field := range []**C.char{&r.log, &r.err_msg, &r.features, &r.prefer, &r.req_nodes,
		&r.exc_nodes, &r.tres_per_job, &r.tres_per_node, &r.comment, &r.admin_comment, &r.background} {
		*field = b.put(strs[i])
	}
	r.min_nodes, r.max_nodes = C.uint32_t(out.MinNodes), C.uint32_t(out.MaxNodes)
	r.segment_size = C.uint32_t(out.SegmentSize)
	return r
}

// pendingLogs takes the queued background messages, one per line, or nil
// when there are none.
func pendingLogs() *string {
	var msgs []string
	for {
		select {
		case m := <-logs:
			msgs = append(msgs, strings.ReplaceAll(m, "\n", " "))
		default:
			return nonEmpty(strings.Join(msgs, "\n"))
		}
	}
}

// publisher keeps the shim's struct gt_params current: a new immutable
// block per configuration, stored with an atomic swap; the blocks it
// replaces are freed only by retire (gt_init, gt_fini), when the shim is
// not reading (slurmctld serialises job_submit, init and fini).
type publisher struct {
	mu      sync.Mutex
	slot    **C.struct_gt_params
	retired []unsafe.Pointer
}

func (p *publisher) publish(cfg ctld.Config) {
	parts := strings.Join(cfg.Partitions, ",")
	var b block
	b.add(&parts)
	pp := (*C.struct_gt_params)(b.alloc(C.sizeof_struct_gt_params))
	pp.deadline_us = C.uint32_t(cfg.Deadline.Microseconds())
	pp.fail_closed = boolU32(cfg.OnFailure == ctld.FailClosed)
	// GPU jobs without the option are in scope under jobs: gpu and all; the
	// shim never refuses a job without GPUs (c/gangtopo_scope.c)
	pp.jobs_gpu = boolU32(cfg.Jobs == jobsubmit.ScopeGPU || cfg.Jobs == jobsubmit.ScopeAll)
	pp.partitions = b.put(&parts)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slot == nil {
		C.free(unsafe.Pointer(pp))
		return
	}
	old := atomic.SwapPointer((*unsafe.Pointer)(unsafe.Pointer(p.slot)), unsafe.Pointer(pp))
	if old != nil {
		p.retired = append(p.retired, old)
	}
}

// retire stores NULL for the shim and frees every block published.
func (p *publisher) retire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slot == nil {
		return
	}
	if cur := atomic.SwapPointer((*unsafe.Pointer)(unsafe.Pointer(p.slot)), nil); cur != nil {
		p.retired = append(p.retired, cur)
	}
	for _, b := range p.retired {
		C.free(b)
	}
	p.retired, p.slot = nil, nil
}

func boolU32(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}
