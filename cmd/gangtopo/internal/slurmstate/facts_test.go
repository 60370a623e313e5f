package slurmstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Facts are read as 22.05 writes them and as later series wrap numbers.
func TestFactFields(t *testing.T) {
	cases := []struct {
		name, in string
		want     JobFacts
	}{
		{"22.05", `{"requeue":false,"qos":"low","account":"ml","comment":"GANGTOPO_CHECKPOINT=sigterm","resv_name":"r1","start_time":1796199159,"restart_cnt":2,"time_limit":90}`,
			JobFacts{QOS: "low", Account: "ml", Comment: "GANGTOPO_CHECKPOINT=sigterm", Reservation: "r1", Start: time.Unix(1796199159, 0).UTC(), Restarts: 2, TimeLimit: 90 * time.Minute}},
		{"22.05 INFINITE and NO_VAL", `{"time_limit":4294967294,"restart_cnt":0}`, JobFacts{}},
		{"22.05 NO_VAL", `{"time_limit":4294967295}`, JobFacts{}},
		{"wrapped numbers", `{"requeue":true,"start_time":{"set":true,"infinite":false,"number":1796199159},"restart_cnt":{"set":true,"number":1},"time_limit":{"set":true,"infinite":false,"number":1440}}`,
			JobFacts{Requeue: true, Start: time.Unix(1796199159, 0).UTC(), Restarts: 1, TimeLimit: 24 * time.Hour}},
		{"wrapped infinite", `{"time_limit":{"set":false,"infinite":true,"number":0}}`, JobFacts{}},
		{"unset and null", `{"requeue":null,"qos":null,"start_time":{"set":false,"number":5},"restart_cnt":null,"time_limit":null}`, JobFacts{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &jsonScanner{data: []byte(c.in)}
			var got JobFacts
			err := s.object(func(key []byte) error {
				handled, err := s.factField(key, &got)
				if !handled {
					t.Fatalf("key %s not handled", key)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	s := &jsonScanner{data: []byte(`{"requeue":"yes"}`)}
	var f JobFacts
	if err := s.object(func(key []byte) error { _, err := s.factField(key, &f); return err }); err == nil {
		t.Error("a string requeue flag was read without error")
	}
}
