package slurmscale

import (
	"encoding/json"
	"testing"
)

// TestAddPoll: the job listing's time and size count only the polls that
// took one (a poll may go on with an earlier listing); jobs' age counts
// every poll that logs it.
func TestAddPoll(t *testing.T) {
	var w ControllerWindow
	for _, line := range []string{
		`{"message":"snapshot published","took":900,"took_sinfo":100,"took_squeue":800,"bytes_squeue":2000000,"jobs_fresh":true,"jobs_age":0}`,
		`{"message":"snapshot published","took":150,"took_sinfo":120,"jobs_fresh":false,"jobs_age":5000}`,
		`{"message":"snapshot published","took":1100,"took_sinfo":100,"took_squeue":1000,"bytes_squeue":4000000,"jobs_fresh":true,"jobs_age":7000}`,
	} {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		w.addPoll(l)
	}
	if w.Polls.N != 3 || w.JobsCmd.N != 2 || w.JobsCmd.Mean != 900 || w.JobsBytes.Mean != 3e6 || w.JobsAge.Max != 7000 || w.NodesCmd.Mean < 106 {
		t.Errorf("polls %+v, jobs %+v, bytes %+v, age %+v, nodes %+v", w.Polls, w.JobsCmd, w.JobsBytes, w.JobsAge, w.NodesCmd)
	}
}
