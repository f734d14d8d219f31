package controllers

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name      string
		count     int
		failAt    int // the call that fails, 0 for none
		wantOK    int
		wantCalls int
	}{
		{name: "nothing", count: 0},
		{name: "all succeed", count: 10, wantOK: 10, wantCalls: 10},
		{name: "first fails", count: 10, failAt: 1, wantOK: 0, wantCalls: 1},
		{name: "second batch fails", count: 10, failAt: 3, wantOK: 2, wantCalls: 3},
		{name: "third batch fails", count: 10, failAt: 4, wantOK: 6, wantCalls: 7},
		{name: "last partial batch fails", count: 10, failAt: 10, wantOK: 9, wantCalls: 10},
		{name: "batches 1 2 4 8 16 then the rest", count: 40, failAt: 32, wantOK: 39, wantCalls: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			errQuota := errors.New("quota")
			ok, err := SlowStartBatch(tt.count, 1, func(int) error {
				if int(calls.Add(1)) == tt.failAt {
					return errQuota
				}
				return nil
			})
			if ok != tt.wantOK || int(calls.Load()) != tt.wantCalls {
				t.Errorf("succeeded %d of %d calls, want %d of %d", ok, calls.Load(), tt.wantOK, tt.wantCalls)
			}
			if wantErr := tt.failAt != 0; (err != nil) != wantErr || (wantErr && !errors.Is(err, errQuota)) {
				t.Errorf("err = %v, want failure %v", err, wantErr)
			}
		})
	}
}
