package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadPods checks that no input makes the pod reader panic, and that
// every pod it accepts satisfies the invariants the simulator relies on.
func FuzzReadPods(f *testing.F) {
	for _, name := range []string{"testdata/pods.csv", "testdata/pods_multigpu.csv"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := readPods("fuzz.csv", bytes.NewReader(data), []string{"G2", "P100", "V100M16"})
		if err != nil {
			return
		}
		for _, p := range pods {
			if p.GPUs < 0 || p.Milli < 0 || p.Milli > 1000 || (p.GPUs > 1 && p.Milli != 1000) || (p.GPUs == 0) != (p.Milli == 0) {
				t.Fatalf("accepted an invalid pod: %+v", p)
			}
		}
	})
}

func FuzzReadNodes(f *testing.F) {
	b, err := os.ReadFile("testdata/nodes.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := readNodes("fuzz.csv", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.GPUs < 0 || n.CPUMilli < 0 || (n.GPUs > 0 && n.Model == "") {
				t.Fatalf("accepted an invalid node: %+v", n)
			}
		}
	})
}

// FuzzReadSacctJSON and FuzzReadSacctPipe check that no input makes the
// sacct readers panic, and that every job they accept has times in order
// and no negative resources.
func FuzzReadSacctJSON(f *testing.F) {
	f.Add([]byte(json2205))
	f.Add([]byte(json2411))
	for _, name := range sacctCaptures(f, "sacct.json") {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSacctJobs(t, data) })
}

func FuzzReadSacctPipe(f *testing.F) {
	f.Add([]byte(pipeDump))
	for _, name := range sacctCaptures(f, "sacct.txt") {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSacctJobs(t, data) })
}

func sacctCaptures(f *testing.F, file string) []string {
	names, err := filepath.Glob(filepath.Join("testdata", "sacct", "*", file))
	if err != nil {
		f.Fatal(err)
	}
	return names
}

func checkSacctJobs(t *testing.T, data []byte) {
	jobs, err := readSacct("fuzz", bytes.NewReader(data), SacctOptions{})
	if err != nil {
		return
	}
	for _, j := range jobs {
		if j.Submit.IsZero() || !j.Start.IsZero() && j.Start.Before(j.Submit) || !j.End.IsZero() && !j.Start.IsZero() && j.End.Before(j.Start) ||
			j.GPUs < 0 || j.ReqGPUs < 0 || j.CPUs < 0 || j.Nodes < 0 || j.Limit < 0 || j.State == "" {
			t.Fatalf("accepted an invalid job: %+v", j)
		}
	}
}
