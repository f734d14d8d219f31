package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/cronschedule"
)

func TestLatestDue(t *testing.T) {
	created := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	tests := []struct {
		name       string
		last       *time.Time
		deadline   *int64
		now        time.Time
		want       time.Time
		wantMissed int
	}{
		{name: "nothing due yet", now: created.Add(20 * time.Second)},
		{name: "the first minute", now: created.Add(40 * time.Second), want: time.Date(2030, 1, 1, 12, 1, 0, 0, time.UTC), wantMissed: 1},
		{name: "three missed, the latest runs", now: created.Add(3 * time.Minute), want: time.Date(2030, 1, 1, 12, 3, 0, 0, time.UTC), wantMissed: 3},
		{name: "after the last start", last: ptr.To(time.Date(2030, 1, 1, 12, 3, 0, 0, time.UTC)), now: time.Date(2030, 1, 1, 12, 3, 50, 0, time.UTC)},
		{name: "the deadline bounds the look back", deadline: ptr.To[int64](90), now: created.Add(10 * time.Minute),
			want: time.Date(2030, 1, 1, 12, 10, 0, 0, time.UTC), wantMissed: 1},
	}
	sched, err := cronschedule.Parse("*/1 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
			cj.Spec.StartingDeadlineSeconds = tt.deadline
			if tt.last != nil {
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(*tt.last))
			}
			got, missed := latestDue(cj, sched, tt.now)
			if !got.Equal(tt.want) || missed != tt.wantMissed {
				t.Errorf("latestDue = %v (%d missed), want %v (%d)", got, missed, tt.want, tt.wantMissed)
			}
		})
	}
}

func TestJobFor(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "u1"}}
	cj.Spec.JobTemplate.Labels = map[string]string{"team": "a"}
	at := time.Date(2030, 1, 1, 12, 1, 0, 0, time.UTC)
	job := jobFor(cj, at)
	if want := "hello-31558321"; job.Name != want || job.Labels["team"] != "a" ||
		job.Annotations[scheduledAnnotation] != "2030-01-01T12:01:00Z" || metav1.GetControllerOf(job).UID != "u1" {
		t.Errorf("job = %+v, want name %s", job.ObjectMeta, want)
	}
}
