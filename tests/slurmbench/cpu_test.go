package main

import (
	"os"
	"testing"
	"time"
)

func TestReadCPU(t *testing.T) {
	before := readCPU(os.Getpid())
	// burn at least two clock ticks of CPU in this process
	for t0 := time.Now(); time.Since(t0) < 50*time.Millisecond; {
	}
	got := readCPU(os.Getpid()).sub(before)
	if got.ctld <= 0 || got.machine <= 0 {
		t.Errorf("readCPU after 50ms of work: process %v, machine %v (want both > 0)", got.ctld, got.machine)
	}
	if none := readCPU(-1); none.ctld != 0 {
		t.Errorf("readCPU of no process: %v (want 0)", none.ctld)
	}
}
