// Package jobindexes reads and writes the index sets of Indexed Jobs, as
// the batch API spells them in status.completedIndexes,
// status.failedIndexes and successPolicy's succeededIndexes: increasing,
// disjoint intervals separated by commas ("1,3-5,7").
package jobindexes

import (
	"fmt"
	"strconv"
	"strings"
)

// Interval is the indexes First to Last, both included.
type Interval struct{ First, Last int32 }

// Set is a sorted list of disjoint intervals.
type Set []Interval

// Parse reads s, whose indexes must be below completions.
func Parse(s string, completions int32) (Set, error) {
	if s == "" {
		return nil, nil
	}
	var set Set
	for _, part := range strings.Split(s, ",") {
		iv, err := parseInterval(part, completions)
		if err != nil {
			return nil, err
		}
		if n := len(set); n > 0 && set[n-1].Last >= iv.First {
			return nil, fmt.Errorf("non-increasing order, previous: %d, current: %d", set[n-1].Last, iv.First)
		}
		set = append(set, iv)
	}
	return set, nil
}

func parseInterval(s string, completions int32) (Interval, error) {
	bounds := strings.Split(s, "-")
	if len(bounds) > 2 {
		return Interval{}, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	var ends [2]int32
	for i, b := range bounds {
		n, err := strconv.Atoi(b)
		if err != nil {
			return Interval{}, fmt.Errorf("cannot convert string to integer for index: %q", b)
		}
		if n >= int(completions) {
			return Interval{}, fmt.Errorf("too large index: %q", b)
		}
		ends[i] = int32(n)
	}
	if len(bounds) == 1 {
		return Interval{ends[0], ends[0]}, nil
	}
	if ends[0] >= ends[1] {
		return Interval{}, fmt.Errorf("non-increasing order, previous: %d, current: %d", ends[0], ends[1])
	}
	return Interval{ends[0], ends[1]}, nil
}

// Count is how many indexes the set holds.
func (s Set) Count() int32 {
	var n int32
	for _, iv := range s {
		n += iv.Last - iv.First + 1
	}
	return n
}

// Has reports whether index i is in the set.
func (s Set) Has(i int32) bool {
	for _, iv := range s {
		if iv.First <= i && i <= iv.Last {
			return true
		}
	}
	return false
}

// Of is the set of the given indexes, in any order, repeats allowed.
func Of(indexes ...int32) Set {
	seen := map[int32]bool{}
	for _, i := range indexes {
		seen[i] = true
	}
	var set Set
	for i := range maxOf(indexes) + 1 {
		if !seen[i] {
			continue
		}
		if n := len(set); n > 0 && set[n-1].Last == i-1 {
			set[n-1].Last = i
		} else {
			set = append(set, Interval{i, i})
		}
	}
	return set
}

func maxOf(xs []int32) int32 {
	m := int32(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// String is the set in the API's spelling.
func (s Set) String() string {
	parts := make([]string, len(s))
	for i, iv := range s {
		parts[i] = strconv.Itoa(int(iv.First))
		if iv.Last > iv.First {
			parts[i] += "-" + strconv.Itoa(int(iv.Last))
		}
	}
	return strings.Join(parts, ",")
}
