package probes

import (
	"slices"
	"testing"
)

func TestTally(t *testing.T) {
	for _, tc := range []struct {
		name string
		s, f int32
		in   []Result
		want []bool
	}{
		{name: "thresholds of one", s: 1, f: 1, in: []Result{Success, Failure, Failure}, want: []bool{true, true, true}},
		{name: "unset thresholds count as one", in: []Result{Failure, Success}, want: []bool{true, true}},
		{name: "three failures in a row", s: 1, f: 3, in: []Result{Failure, Failure, Success, Failure, Failure, Failure, Failure},
			want: []bool{false, false, true, false, false, true, true}},
		{name: "two successes in a row", s: 2, f: 1, in: []Result{Success, Failure, Success, Success, Success},
			want: []bool{false, true, false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ta tally
			var got []bool
			for _, r := range tc.in {
				got = append(got, ta.add(r, tc.s, tc.f))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("add → %v, want %v", got, tc.want)
			}
		})
	}
}
