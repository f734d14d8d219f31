package scheduler

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/scheduler/plugins"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		file    *string // nil: no path given
		want    Config
		wantErr string // a substring of the error
	}{
		{name: "no path gives the defaults", want: Config{}},
		{name: "an empty file gives the defaults", file: ptr(""), want: Config{}},
		{
			name: "every field",
			file: ptr("scoringStrategy: MostAllocated\npercentageOfNodesToScore: 30\nweights:\n  TaintToleration: 5\n  NodeAffinity: 0\n"),
			want: Config{ScoringStrategy: plugins.MostAllocated, PercentageOfNodesToScore: 30,
				Weights: map[string]int64{"TaintToleration": 5, "NodeAffinity": 0}},
		},
		{name: "LeastAllocated", file: ptr("scoringStrategy: LeastAllocated\n"), want: Config{ScoringStrategy: plugins.LeastAllocated}},
		{name: "an unknown field", file: ptr("scoringStrategy: MostAllocated\npercentage: 30\n"), wantErr: `unknown field "percentage"`},
		{name: "an unknown strategy", file: ptr("scoringStrategy: RequestedToCapacityRatio\n"), wantErr: "scoringStrategy must be LeastAllocated or MostAllocated"},
		{name: "a wrong type", file: ptr("percentageOfNodesToScore: lots\n"), wantErr: "percentageOfNodesToScore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != nil {
				path = filepath.Join(t.TempDir(), "scheduler.yaml")
				if err := os.WriteFile(path, []byte(*tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LoadConfig(path)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("LoadConfig error = %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("LoadConfig: %v", err)
			case !reflect.DeepEqual(got, tt.want):
				t.Errorf("LoadConfig = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadConfig of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func ptr[T any](v T) *T { return &v }

// scoreWeights returns each score plugin's weight by name.
func scoreWeights(p Profile) map[string]int64 {
	out := map[string]int64{}
	for _, ws := range p.Scores {
		out[ws.Plugin.Name()] = ws.Weight
	}
	return out
}

func TestNewProfileWeights(t *testing.T) {
	// Only the plugins named are checked, so that new plugins with their
	// own defaults do not break this test; 0 means not scoring.
	defaults := map[string]int64{"NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "NodeAffinity": 2, "TaintToleration": 3}
	with := func(changes map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range defaults {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		weights map[string]int64
		want    map[string]int64
		wantErr string
	}{
		{name: "kube-scheduler's defaults", want: defaults},
		{name: "an override", weights: map[string]int64{"TaintToleration": 10}, want: with(map[string]int64{"TaintToleration": 10})},
		{
			name:    "0 disables a score",
			weights: map[string]int64{"NodeAffinity": 0, "NodeResourcesBalancedAllocation": 0},
			want:    with(map[string]int64{"NodeAffinity": 0, "NodeResourcesBalancedAllocation": 0}),
		},
		{name: "an unknown plugin", weights: map[string]int64{"NodeResourcesLeastAllocated": 1}, wantErr: `no score plugin "NodeResourcesLeastAllocated"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewProfile(Config{Weights: tt.weights}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("NewProfile error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := scoreWeights(p)
			for name, want := range tt.want {
				w, ok := got[name]
				switch {
				case want == 0 && ok:
					t.Errorf("%s scores with weight %d, want it disabled", name, w)
				case want != 0 && w != want:
					t.Errorf("%s weight = %d, want %d", name, w, want)
				}
			}
		})
	}
}

func TestNewProfileScoringStrategy(t *testing.T) {
	tests := []struct {
		strategy plugins.ScoringStrategy
		want     plugins.ScoringStrategy
	}{
		{strategy: "", want: plugins.LeastAllocated},
		{strategy: plugins.LeastAllocated, want: plugins.LeastAllocated},
		{strategy: plugins.MostAllocated, want: plugins.MostAllocated},
	}
	for _, tt := range tests {
		t.Run("strategy "+string(tt.strategy), func(t *testing.T) {
			p, err := NewProfile(Config{ScoringStrategy: tt.strategy, PercentageOfNodesToScore: 30}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got plugins.ScoringStrategy
			for _, ws := range p.Scores {
				if s, ok := ws.Plugin.(plugins.NodeResourcesScore); ok {
					got = s.Strategy
				}
			}
			if got != tt.want {
				t.Errorf("NodeResourcesScore strategy = %q, want %q", got, tt.want)
			}
			if p.PercentageOfNodesToScore != 30 {
				t.Errorf("PercentageOfNodesToScore = %d, want 30", p.PercentageOfNodesToScore)
			}
		})
	}
}

func TestNewProfileFilterOrder(t *testing.T) {
	// kube-scheduler's order: cheap checks on the node first (the class
	// filters, which judge a whole class at once, before the others).
	// Other filters may sit between these.
	want := []string{"NodeUnschedulable", "TaintToleration", "NodeName", "NodeAffinity", "NodePorts", "NodeResourcesFit"}
	p, err := NewProfile(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range append(p.ClassFilters, p.Filters...) {
		got = append(got, f.Name())
	}
	next := 0
	for _, name := range got {
		if next < len(want) && name == want[next] {
			next++
		}
	}
	if next < len(want) {
		t.Errorf("filters %v do not run %v in this order", got, want)
	}
}
