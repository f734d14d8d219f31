package component

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestWithMaxWaitCapsRetries(t *testing.T) {
	limiter := WithMaxWait(2 * time.Second)(workqueue.DefaultTypedControllerRateLimiter[string]())
	var last time.Duration
	for range 30 { // the default limiter alone would reach 1000 s
		last = limiter.When("key")
	}
	if last != 2*time.Second {
		t.Fatalf("30th retry waits %v, want the 2 s cap", last)
	}
}
