package quota

import (
	"strings"
	"testing"
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
