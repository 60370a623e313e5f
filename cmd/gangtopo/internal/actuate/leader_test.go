package actuate

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestInControl(t *testing.T) {
	tests := []struct {
		name, ping, want string
		found            bool
	}{
		{"primary up", "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n", "ctl1", true},
		{"primary down: the backup", "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n*****\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n", "ctl2", true},
		{"third of three", "Slurmctld(primary) at a is DOWN\nSlurmctld(backup1) at b is DOWN\nSlurmctld(backup2) at c is UP\n", "c", true},
		{"all down", "Slurmctld(primary) at ctl1 is DOWN\n", "", false},
		{"nothing", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := InControl(tt.ping)
			if got != tt.want || found != tt.found {
				t.Errorf("InControl = %q, %v; want %q, %v", got, found, tt.want, tt.found)
			}
		})
	}
}

func TestSlurmPrimary(t *testing.T) {
	ping := func(out string, err error) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return out, err }
	}
	tests := []struct {
		name, host string
		ping       func(context.Context) (string, error)
		lead       bool
		why        string
	}{
		{"here", "ctl1", ping("Slurmctld(primary) at ctl1.example.org is UP\n", nil), true, ""},
		{"the backup while the primary runs", "ctl2", ping("Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n", nil), false, "runs on ctl1"},
		{"the backup once the primary is down", "ctl2", ping("Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n", nil), true, ""},
		{"ping fails", "ctl1", ping("", errors.New("scontrol ping: exit status 1")), false, "not known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notLocal := func(context.Context, string) bool { return false }
			lead, why := SlurmPrimary{Host: tt.host, Ping: tt.ping, Local: notLocal}.Lead(context.Background())
			if lead != tt.lead || !strings.Contains(why, tt.why) {
				t.Errorf("Lead = %v %q; want %v, a reason with %q", lead, why, tt.lead, tt.why)
			}
		})
	}
}

// TestLocalHost: localhost is this host by its address (the lab's
// SlurmctldHost=localhost); a name that does not resolve is not.
func TestLocalHost(t *testing.T) {
	if !LocalHost(context.Background(), "localhost") {
		t.Error("localhost is not local")
	}
	if LocalHost(context.Background(), "no-such-host.invalid") {
		t.Error("an unresolvable name is local")
	}
}

// TestProcessLock: of two controllers on one host, the first to take the
// lock acts; the other does not, until the first lets go.
func TestProcessLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "controller.lock")
	ctx := context.Background()
	a, b := &ProcessLock{Path: path}, &ProcessLock{Path: path}
	if ok, why := a.Lead(ctx); !ok {
		t.Fatalf("first: %s", why)
	}
	if ok, why := b.Lead(ctx); ok || !strings.Contains(why, "another controller") {
		t.Fatalf("second: %v %q, want refused", ok, why)
	}
	a.f.Close() // the first process ends
	if ok, why := b.Lead(ctx); !ok {
		t.Fatalf("second once the first ended: %s", why)
	}
	if ok, _ := (&ProcessLock{Path: path, Next: Never{}}).Lead(ctx); ok {
		t.Error("a lock whose next leader says no must not lead")
	}
}
