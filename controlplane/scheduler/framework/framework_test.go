package framework

import (
	"slices"
	"testing"
)

func TestNormalizeToMax(t *testing.T) {
	tests := []struct {
		name    string
		scores  []int64
		reverse bool
		want    []int64
	}{
		{name: "highest becomes max", scores: []int64{0, 5, 10}, want: []int64{0, 50, 100}},
		{name: "fractions round down", scores: []int64{1, 2, 3}, want: []int64{33, 66, 100}},
		{name: "already in range is rescaled", scores: []int64{20, 40}, want: []int64{50, 100}},
		{name: "reverse: highest becomes min", scores: []int64{0, 5, 10}, reverse: true, want: []int64{100, 50, 0}},
		{name: "reverse rounds the subtracted part down", scores: []int64{1, 2, 3}, reverse: true, want: []int64{67, 34, 0}},
		{name: "all zero stays min", scores: []int64{0, 0, 0}, want: []int64{0, 0, 0}},
		{name: "all zero reversed becomes max", scores: []int64{0, 0, 0}, reverse: true, want: []int64{100, 100, 100}},
		{name: "empty", scores: []int64{}, want: []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.scores)
			NormalizeToMax(got, tt.reverse)
			if !slices.Equal(got, tt.want) {
				t.Errorf("NormalizeToMax(%v, %v) = %v, want %v", tt.scores, tt.reverse, got, tt.want)
			}
		})
	}
}

func TestCycleState(t *testing.T) {
	s := NewCycleState()
	if _, ok := s.Read("k"); ok {
		t.Fatal("Read on an empty state found a value")
	}
	s.Write("k", 1)
	s.Write("k", 2)
	if v, ok := s.Read("k"); !ok || v != 2 {
		t.Errorf("Read after two writes = %v, %v; want 2, true", v, ok)
	}
}
