package e2e

import (
	"context"
	"testing"
	"time"
)

func TestSmokeStockPlacement(t *testing.T) {
	ctx := context.Background()
	t.Cleanup(func() { _ = lab.CancelAll(ctx) })
	id, err := lab.Submit(ctx, nil, "-o", "/dev/null", "--gpus=8", "--cpus-per-gpu=1", "--wrap", "sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	j, err := lab.WaitSettled(ctx, id, 2*time.Second, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "RUNNING" || len(j.Nodes) != 1 || j.NumGPUs() != 8 {
		t.Fatalf("job %s: %s on %v with GPUs %v", id, j.State, j.Nodes, j.GPUs)
	}
}
