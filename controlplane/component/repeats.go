package component

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Repeats decides when a message that keeps recurring is logged: the first
// time, then once per back-off step, the step doubling from Base up to
// Max, each time with how often it recurred since the last line. A message
// not seen for Max starts over. Safe for concurrent use; the zero value
// is not usable, use NewRepeats.
type Repeats struct {
	base, max time.Duration
	clock     clock.PassiveClock
	mu        sync.Mutex
	seen      map[string]*repeat
}

type repeat struct {
	next, last time.Time
	step       time.Duration
	suppressed int
}

// maxRepeatKeys bounds the messages remembered; past it, those idle for
// Max are forgotten.
const maxRepeatKeys = 4096

// NewRepeats returns a Repeats stepping from base to max on clk.
func NewRepeats(base, max time.Duration, clk clock.PassiveClock) *Repeats {
	return &Repeats{base: base, max: max, clock: clk, seen: map[string]*repeat{}}
}

// Allow reports whether the message key is to be logged now and, if so,
// how many times it recurred unlogged since it last was.
func (r *Repeats) Allow(key string) (ok bool, suppressed int) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.seen[key]
	if e == nil || now.Sub(e.last) > r.max {
		if len(r.seen) >= maxRepeatKeys {
			r.forgetIdle(now)
		}
		r.seen[key] = &repeat{next: now.Add(r.base), last: now, step: r.base}
		return true, 0
	}
	e.last = now
	if now.Before(e.next) {
		e.suppressed++
		return false, 0
	}
	e.step = min(2*e.step, r.max)
	e.next = now.Add(e.step)
	suppressed, e.suppressed = e.suppressed, 0
	return true, suppressed
}

func (r *Repeats) forgetIdle(now time.Time) {
	for k, e := range r.seen {
		if now.Sub(e.last) > r.max {
			delete(r.seen, k)
		}
	}
}
