package hostlist

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIndices(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"0-3", []int{0, 1, 2, 3}, ""},
		{"0-1,6", []int{0, 1, 6}, ""},
		{"1-3,5-7", []int{1, 2, 3, 5, 6, 7}, ""},
		{"7", []int{7}, ""},
		{"3-1", nil, `bad range "3-1" in "3-1"`},
		{"0,0", nil, `indices not ascending in "0,0"`},
		{"4,2", nil, `indices not ascending in "4,2"`},
		{"0-99999999", nil, `bad range "0-99999999"`},
		{"99", nil, `bad index "99" in "99"`},
		{"x", nil, `bad index "x"`},
		{"", nil, `bad index "" in ""`},
		{"-1", nil, `bad index "-1"`},
	}
	for _, tc := range tests {
		got, err := Indices(tc.in, 64)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Indices(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("Indices(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
