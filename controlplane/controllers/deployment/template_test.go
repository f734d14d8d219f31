package deployment

import (
	"testing"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTemplateHash(t *testing.T) {
	base := newDeployment(3, "", "")
	// Pinned, so that a change to the hash (which would replace every
	// Deployment's pods on upgrade) cannot go unnoticed.
	const golden = "67db564556"
	if got := controllers.TemplateHash(&base.Spec.Template, nil); got != golden {
		t.Errorf("hash %q, want %q", got, golden)
	}

	otherImage := newDeployment(3, "", "", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	scaled := newDeployment(7, "1", "0", func(d *appsv1.Deployment) { d.Name, d.UID = "other", "other-uid" })
	tests := []struct {
		name      string
		d         *appsv1.Deployment
		collision *int32
		same      bool
	}{
		{"same template", newDeployment(3, "", ""), nil, true},
		{"only the Deployment differs", scaled, nil, true},
		{"other image", otherImage, nil, false},
		{"collisionCount 0", base, new(int32(0)), false},
		{"collisionCount 1", base, new(int32(1)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := controllers.TemplateHash(&tt.d.Spec.Template, tt.collision)
			if (got == golden) != tt.same {
				t.Errorf("hash %q, same as %q: %v, want %v", got, golden, got == golden, tt.same)
			}
			if again := controllers.TemplateHash(&tt.d.Spec.Template, tt.collision); again != got {
				t.Errorf("hash not stable: %q then %q", got, again)
			}
		})
	}
	if controllers.TemplateHash(&base.Spec.Template, new(int32(0))) == controllers.TemplateHash(&base.Spec.Template, new(int32(1))) {
		t.Error("collisionCount 0 and 1 hash alike")
	}
}

func TestNewReplicaSet(t *testing.T) {
	d := newDeployment(3, "", "", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 5 })
	hash := controllers.TemplateHash(&d.Spec.Template, nil)
	rs := newReplicaSet(d, hash)

	if rs.Name != "web-"+hash || rs.Namespace != "ns" {
		t.Errorf("name %s/%s, want ns/web-%s", rs.Namespace, rs.Name, hash)
	}
	for what, m := range map[string]map[string]string{
		"labels": rs.Labels, "selector": rs.Spec.Selector.MatchLabels, "template labels": rs.Spec.Template.Labels,
	} {
		if m[hashLabel] != hash || m["app"] != "web" {
			t.Errorf("%s %v, want app=web and %s=%s", what, m, hashLabel, hash)
		}
	}
	if _, ok := d.Spec.Template.Labels[hashLabel]; ok {
		t.Error("the Deployment's template got the hash label")
	}
	if _, ok := d.Spec.Selector.MatchLabels[hashLabel]; ok {
		t.Error("the Deployment's selector got the hash label")
	}
	ref := metav1.GetControllerOf(rs)
	if ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller ref %+v", ref)
	}
	if size(rs) != 0 || rs.Spec.MinReadySeconds != 5 {
		t.Errorf("replicas %d minReadySeconds %d, want 0 and 5", size(rs), rs.Spec.MinReadySeconds)
	}
	if !equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
		t.Error("the new ReplicaSet's template differs from the Deployment's beyond the hash label")
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	d := newDeployment(1, "", "")
	withHash := newReplicaSet(d, "abc").Spec.Template
	otherHash := newReplicaSet(d, "xyz").Spec.Template
	otherLabel := d.Spec.Template.DeepCopy()
	otherLabel.Labels["tier"] = "front"
	otherImage := d.Spec.Template.DeepCopy()
	otherImage.Spec.Containers[0].Image = "busybox:2"
	noLabels := d.Spec.Template.DeepCopy()
	noLabels.Labels = nil
	emptyLabels := d.Spec.Template.DeepCopy()
	emptyLabels.Labels = map[string]string{}

	tests := []struct {
		name string
		a, b *corev1.PodTemplateSpec
		want bool
	}{
		{"hash label only on one", &withHash, &d.Spec.Template, true},
		{"different hashes", &withHash, &otherHash, true},
		{"another label", &withHash, otherLabel, false},
		{"another image", &d.Spec.Template, otherImage, false},
		{"nil and empty labels", noLabels, emptyLabels, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := equalIgnoreHash(tt.a, tt.b); got != tt.want {
				t.Errorf("equalIgnoreHash = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFindNewReplicaSet(t *testing.T) {
	d := newDeployment(3, "", "")
	current := func(rs *appsv1.ReplicaSet) { rs.Spec.Template = newReplicaSet(d, "h1").Spec.Template }
	stale := func(rs *appsv1.ReplicaSet) {
		rs.Spec.Template = *d.Spec.Template.DeepCopy()
		rs.Spec.Template.Spec.Containers[0].Image = "busybox:0"
	}
	older, newer, old := testRS("older", 1, 20, current), testRS("newer", 1, 10, current), testRS("old", 1, 30, stale)
	rss := []*appsv1.ReplicaSet{newer, old, older}

	got := findNewReplicaSet(d, rss)
	if got != older {
		t.Fatalf("new ReplicaSet %v, want the oldest matching, %q", got, older.Name)
	}
	if olds := oldReplicaSets(rss, got); len(olds) != 2 || olds[0] != newer || olds[1] != old {
		t.Errorf("old ReplicaSets %v", olds)
	}
	if got := findNewReplicaSet(d, []*appsv1.ReplicaSet{old}); got != nil {
		t.Errorf("found %q for a template none has", got.Name)
	}
}
