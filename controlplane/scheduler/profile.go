package scheduler

import (
	"fmt"
	"os"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
	"github.com/skiff-lab/skiff/controlplane/scheduler/plugins"
)

// Config is the scheduler's configuration file (--scheduler-config):
//
//	scoringStrategy: LeastAllocated   # or MostAllocated
//	percentageOfNodesToScore: 0       # 0: adaptive, as kube-scheduler
//	weights:                          # score plugin weights
//	  TaintToleration: 3
type Config struct {
	ScoringStrategy          plugins.ScoringStrategy `json:"scoringStrategy,omitempty"`
	PercentageOfNodesToScore int                     `json:"percentageOfNodesToScore,omitempty"`
	Weights                  map[string]int64        `json:"weights,omitempty"`
}

// LoadConfig reads a configuration file; an empty path gives the defaults.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("scheduler config %s: %w", path, err)
	}
	switch cfg.ScoringStrategy {
	case "", plugins.LeastAllocated, plugins.MostAllocated:
	default:
		return cfg, fmt.Errorf("scheduler config %s: scoringStrategy must be LeastAllocated or MostAllocated, got %q", path, cfg.ScoringStrategy)
	}
	return cfg, nil
}

// defaultWeights are kube-scheduler's default score weights.
var defaultWeights = map[string]int64{
	"NodeResourcesFit":                1,
	"NodeResourcesBalancedAllocation": 1,
	"NodeAffinity":                    2,
	"TaintToleration":                 3,
	"InterPodAffinity":                2,
	"PodTopologySpread":               2,
	"ImageLocality":                   1,
}

// NewProfile builds the plugin set, in kube-scheduler's order, from cfg;
// volumes, if set, places pods by their claims.
func NewProfile(cfg Config, volumes *plugins.VolumeBinding) (Profile, error) {
	strategy := cfg.ScoringStrategy
	if strategy == "" {
		strategy = plugins.LeastAllocated
	}
	scores := []framework.ScorePlugin{
		plugins.TaintToleration{},
		plugins.NodeAffinity{},
		plugins.NodeResourcesScore{Strategy: strategy},
		plugins.PodTopologySpread{},
		plugins.InterPodAffinity{},
		plugins.NodeResourcesBalancedAllocation{},
		plugins.ImageLocality{},
	}
	p := Profile{
		PreFilters:   []framework.PreFilterPlugin{plugins.InterPodAffinity{}, plugins.PodTopologySpread{}, plugins.ImageLocality{}},
		ClassFilters: []framework.FilterPlugin{plugins.NodeUnschedulable{}, plugins.TaintToleration{}},
		Filters: []framework.FilterPlugin{
			plugins.NodeName{}, plugins.NodeAffinity{}, plugins.NodePorts{}, plugins.NodeResourcesFit{},
			plugins.PodTopologySpread{}, plugins.InterPodAffinity{},
		},
		PercentageOfNodesToScore: cfg.PercentageOfNodesToScore,
	}
	if volumes != nil { // after NodeResourcesFit, as kube-scheduler orders them
		p.PreFilters = slices.Insert(p.PreFilters, 0, framework.PreFilterPlugin(*volumes))
		p.Filters = slices.Insert(p.Filters, 4, framework.FilterPlugin(*volumes))
		p.PreBinds = append(p.PreBinds, *volumes)
	}
	for name := range cfg.Weights {
		if _, ok := defaultWeights[name]; !ok {
			return p, fmt.Errorf("scheduler config: no score plugin %q", name)
		}
	}
	for _, s := range scores {
		w, ok := cfg.Weights[s.Name()]
		if !ok {
			w = defaultWeights[s.Name()]
		}
		if w > 0 {
			p.Scores = append(p.Scores, WeightedScore{Plugin: s, Weight: w})
		}
	}
	return p, nil
}
