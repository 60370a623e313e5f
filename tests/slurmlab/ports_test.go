package slurmlab

import "testing"

// TestClaimPortsDisjoint: two labs claiming at once get ranges that do not
// overlap, whatever their sizes, and ports given back can be claimed again.
func TestClaimPortsDisjoint(t *testing.T) {
	a, releaseA, err := claimPorts(300) // covers four slots
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, err := claimPorts(20)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if b < a+300 && a < b+20 {
		t.Errorf("ranges [%d,%d) and [%d,%d) overlap", a, a+300, b, b+20)
	}
	if _, ok := lockPorts(a, 300); ok {
		t.Errorf("the range at %d could be locked again while claimed", a)
	}
	releaseA()
	again, ok := lockPorts(a, 300)
	if !ok {
		t.Fatalf("the range at %d could not be locked after it was given back", a)
	}
	again()
}
