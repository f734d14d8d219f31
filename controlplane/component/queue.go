package component

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// NewQueue is a component's work queue of keys; name labels its metrics.
// A key that fails is retried with client-go's default controller rate
// limiter (per key 5 ms doubling to 1000 s, and 10 retries a second
// overall), or as WithBackoff says.
func NewQueue(name string, opts ...QueueOption) workqueue.TypedRateLimitingInterface[string] {
	limiter := workqueue.DefaultTypedControllerRateLimiter[string]()
	for _, o := range opts {
		limiter = o(limiter)
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// QueueOption changes how a queue retries failed keys.
type QueueOption func(workqueue.TypedRateLimiter[string]) workqueue.TypedRateLimiter[string]

// WithBackoff retries each failed key after base, doubling up to max, and
// nothing else: for keys that fail together for one cause (a full cluster
// CIDR), which an overall retry budget would only delay in a line.
func WithBackoff(base, max time.Duration) QueueOption {
	return func(workqueue.TypedRateLimiter[string]) workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max)
	}
}

// WithMaxWait caps every retry's wait at max: for keys whose work must
// not stall for the default limiter's 1000 s (a namespace being deleted).
func WithMaxWait(max time.Duration) QueueOption {
	return func(l workqueue.TypedRateLimiter[string]) workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedWithMaxWaitRateLimiter(l, max)
	}
}
