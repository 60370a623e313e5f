package quota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		shares Shares
		want   []string // substrings of the error; none: valid
	}{
		{"fits", Shares{{Account: "a", GPUs: 64}, {Account: "b", GPUs: 64, Cap: 96}}, nil},
		// 64 + 65 = 129 > 128
		{"past the cluster", Shares{{Account: "a", GPUs: 64}, {Account: "b", GPUs: 65}}, []string{"sum to 129 GPUs, past the cluster's 128"}},
		{"negative", Shares{{Account: "a", GPUs: -8}}, []string{"account a: share -8 is negative"}},
		{"twice", Shares{{Account: "a", GPUs: 8}, {Account: "A", GPUs: 8}}, []string{"account A: given twice"}},
		{"cap below share", Shares{{Account: "a", GPUs: 16, Cap: 8}}, []string{"cap 8 is below its share 16"}},
		{"no name", Shares{{GPUs: 8}}, []string{"without an account name"}},
		{"all reported", Shares{{Account: "a", GPUs: -1}, {Account: "b", GPUs: 200}}, []string{"share -1", "sum to 200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.shares.Validate(128)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestProportional(t *testing.T) {
	tests := []struct {
		n       int
		weights []float64
		want    []int
	}{
		// 10 x 1/3 = 3.33 each: 3 + 3 + 3, one left: the earlier weight
		{10, []float64{1, 1, 1}, []int{4, 3, 3}},
		// 2048 x 0.26, 0.25, 0.25, 0.24 = 532.48, 512, 512, 491.52: 532 +
		// 512 + 512 + 491 = 2047, the one left to the largest remainder (.52)
		{2048, []float64{26, 25, 25, 24}, []int{532, 512, 512, 492}},
		{5, []float64{0, 0}, []int{0, 0}},
		{0, []float64{1, 2}, []int{0, 0}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Proportional(tt.n, tt.weights)); diff != "" {
			t.Errorf("Proportional(%d, %v) (-want +got):\n%s", tt.n, tt.weights, diff)
		}
	}
}
