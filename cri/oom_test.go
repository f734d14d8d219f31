package cri

import "testing"

func TestCounter(t *testing.T) {
	tests := []struct {
		name, data string
		want       int64
	}{
		{"v2 memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n", 1},
		{"v1 memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", 2},
		{"no kill", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", 0},
		{"no counter", "oom_kill_disable 0\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := counter([]byte(tt.data), "oom_kill"); got != tt.want {
				t.Errorf("counter = %d, want %d", got, tt.want)
			}
		})
	}
}
