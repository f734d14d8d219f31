package controllers

import "sync"

// SlowStartBatch calls fn count times (with 0 to count-1), in concurrent batches of 1, 2, 4, …
// (starting at initial). After a batch with a failure it starts no more:
// when every create fails the same way (a quota, a bad template), one
// request finds out instead of hundreds. It returns how many calls
// succeeded and the first error.
func SlowStartBatch(count, initial int, fn func(i int) error) (int, error) {
	done := 0
	for batch := min(count, initial); batch > 0; batch = min(2*batch, count-done) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		base := done
		for i := range batch {
			wg.Go(func() {
				if err := fn(base + i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		done += batch - len(errs)
		if err, failed := <-errs; failed {
			return done, err
		}
	}
	return done, nil
}
