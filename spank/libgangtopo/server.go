package main

/*
#include <stdlib.h>
#include "gangtopo_abi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// server answers the shim's requests (gangtopo_abi.h, "The protocol"): one
// goroutine reads {seq, job} from the request pipe, decides, frees the job
// and writes {seq, result} to the response pipe.
//
// Why a goroutine behind pipes rather than a function the shim calls: a
// C->Go callback on slurmctld's RPC thread leaves a Go P behind on that
// thread when it returns, and sysmon polls every 20 µs for up to 10 ms
// before taking it back: CPU in slurmctld for every submission, more than
// the call itself (docs/benchmarks.md has the measurements). Here both
// files are non-blocking, so the goroutine parks in the netpoller between
// jobs, every P is idle and sysmon sleeps.
type server struct {
	req, resp *os.File
	done      chan struct{}
}

// newServer takes over the two fds (closing them on error).
func newServer(reqFD, respFD int) (*server, error) {
	for _, fd := range []int{reqFD, respFD} {
		if err := syscall.SetNonblock(fd, true); err != nil {
			syscall.Close(reqFD)
			syscall.Close(respFD)
			return nil, fmt.Errorf("pipe %d: %w", fd, err)
		}
	}
	// non-blocking fds: os.NewFile registers them with the netpoller
	return &server{req: os.NewFile(uintptr(reqFD), "gangtopo-requests"),
		resp: os.NewFile(uintptr(respFD), "gangtopo-answers"), done: make(chan struct{})}, nil
}

// run serves until the request pipe ends or stop interrupts it. gateOf
// returns the gate in force (nil: not configured, jobs pass).
func (s *server) run(gateOf func() *ctld.Gate) {
	defer close(s.done)
	for {
		seq, job, err := readMsg(s.req)
		if err != nil {
			return
		}
		res := answer(gateOf, (*C.struct_gt_job)(job))
		if err := writeMsg(s.resp, seq, unsafe.Pointer(res)); err != nil {
			C.free(unsafe.Pointer(res)) // the shim will not read it
			return
		}
	}
}

// stop interrupts the reader, waits up to wait for the goroutine to end,
// frees the requests still queued when it did, and closes both files. A
// call still running past wait finds the files closed and frees its result;
// requests queued behind it are then left unfreed (a stall at reconfigure
// or shutdown only: reading them would race with that goroutine).
func (s *server) stop(wait time.Duration) {
	_ = s.req.SetReadDeadline(time.Now())
	select {
	case <-s.done:
		s.drain()
	case <-time.After(wait):
	}
	_ = s.req.Close()
	_ = s.resp.Close() // waits for a write in progress: none can follow
}

// drain frees the jobs of requests nobody will answer.
func (s *server) drain() {
	_ = s.req.SetReadDeadline(time.Time{})
	rc, err := s.req.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		var m [2]uint64
		buf := unsafe.Slice((*byte)(unsafe.Pointer(&m)), msgSize)
		for {
			n, err := syscall.Read(int(fd), buf)
			if n != msgSize || err != nil {
				return true // EAGAIN: empty; never wait
			}
			C.free(*(*unsafe.Pointer)(unsafe.Pointer(&m[1])))
		}
	})
}

const msgSize = int(C.sizeof_struct_gt_msg)

// readMsg reads one struct gt_msg. The shim writes each in one atomic
// write, so a read gets a whole one.
func readMsg(f *os.File) (uint64, unsafe.Pointer, error) {
	var m [2]uint64 // struct gt_msg: seq, ptr
	if _, err := io.ReadFull(f, unsafe.Slice((*byte)(unsafe.Pointer(&m)), msgSize)); err != nil {
		return 0, nil, err
	}
	return m[0], *(*unsafe.Pointer)(unsafe.Pointer(&m[1])), nil
}

func writeMsg(f *os.File, seq uint64, p unsafe.Pointer) error {
	var m [2]uint64
	m[0] = seq
	*(*unsafe.Pointer)(unsafe.Pointer(&m[1])) = p
	n, err := f.Write(unsafe.Slice((*byte)(unsafe.Pointer(&m)), msgSize))
	if err == nil && n != msgSize {
		err = errors.New("short write")
	}
	return err
}

// answer decides about one job and frees it; it never panics. The job is
// read once, into Go memory, and freed before the decision is made: from
// then on nothing refers to the shim's block.
func answer(gateOf func() *ctld.Gate, job *C.struct_gt_job) (res *C.struct_gt_result) {
	defer func() {
		if r := recover(); r != nil {
			res = packResult(jobsubmit.Result{LogLevel: jobsubmit.LogError,
				Log: fmt.Sprintf("internal error, job left as submitted: %v", r)}, pendingLogs())
		}
	}()
	var out jobsubmit.Result
	if job.request == C.GT_REQ_MODIFY {
		m := goModification(job)
		C.free(unsafe.Pointer(job))
		if g := gateOf(); g != nil {
			out = g.Modify(m)
		}
		return packResult(out, pendingLogs())
	}
	j := goJob(job)
	C.free(unsafe.Pointer(job))
	if g := gateOf(); g != nil {
		out = g.Submit(j, time.Now())
	}
	return packResult(out, pendingLogs())
}
