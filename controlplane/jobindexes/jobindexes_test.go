package jobindexes

import (
	"strings"
	"testing"
)

func TestParseAndString(t *testing.T) {
	set, err := Parse("0,2-4,7", 8)
	if err != nil {
		t.Fatal(err)
	}
	if set.Count() != 5 || !set.Has(3) || set.Has(5) || set.String() != "0,2-4,7" {
		t.Errorf("set %v: count %d", set, set.Count())
	}
	if got := Of(4, 0, 2, 3, 7, 3).String(); got != "0,2-4,7" {
		t.Errorf("Of = %q", got)
	}
	for in, want := range map[string]string{"1,1": "non-increasing order", "3-2": "non-increasing order", "9": "too large index", "a": "cannot convert", "1-2-3": "at most two parts"} {
		if _, err := Parse(in, 8); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}
