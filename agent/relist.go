package agent

import (
	"slices"
	"strings"

	"github.com/skiff-lab/skiff/cri"
)

// fingerprints sums up each pod's containers as a string that changes when
// any container appears, goes or changes state, and names the pods seen.
func fingerprints(all []cri.Container) (map[string]string, []cri.PodRef) {
	parts := map[string][]string{}
	refs := map[string]cri.PodRef{}
	for _, c := range all {
		parts[c.Pod.UID] = append(parts[c.Pod.UID], c.ID+"="+string(c.State))
		refs[c.Pod.UID] = c.Pod
	}
	prints := make(map[string]string, len(parts))
	for uid, p := range parts {
		slices.Sort(p)
		prints[uid] = strings.Join(p, ",")
	}
	out := make([]cri.PodRef, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref)
	}
	return prints, out
}

// changedPods lists the pods whose fingerprint differs between two relists,
// including pods that appeared or disappeared.
func changedPods(prev, cur map[string]string) []string {
	var out []string
	for uid, p := range cur {
		if prev[uid] != p {
			out = append(out, uid)
		}
	}
	for uid := range prev {
		if _, ok := cur[uid]; !ok {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}
