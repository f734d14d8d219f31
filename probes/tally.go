package probes

// tally counts how many runs in a row gave the same verdict.
type tally struct {
	last Result
	run  int
}

// add records one verdict (Success or Failure) and reports whether its run
// has reached the threshold for that verdict, i.e. whether the worker should
// publish it. Thresholds below 1 count as 1.
func (t *tally) add(v Result, successThreshold, failureThreshold int32) bool {
	if v == t.last {
		t.run++
	} else {
		t.last, t.run = v, 1
	}
	need := failureThreshold
	if v == Success {
		need = successThreshold
	}
	return t.run >= int(max(need, 1))
}
