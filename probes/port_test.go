package probes

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "web", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "zero"}}}
	for _, tc := range []struct {
		name    string
		port    intstr.IntOrString
		want    int
		wantErr error
		anyErr  bool
	}{
		{name: "number", port: intstr.FromInt32(80), want: 80},
		{name: "named", port: intstr.FromString("http"), want: 8080},
		{name: "digits as a name", port: intstr.FromString("9090"), want: 9090},
		{name: "unknown name", port: intstr.FromString("metrics"), wantErr: ErrPortNotFound},
		{name: "zero", port: intstr.FromInt32(0), anyErr: true},
		{name: "too big", port: intstr.FromInt32(70000), anyErr: true},
		{name: "named port without number", port: intstr.FromString("zero"), anyErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolvePort(tc.port, c)
			switch {
			case tc.wantErr != nil || tc.anyErr:
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("resolvePort = %d, %v; want error %v", got, err, tc.wantErr)
				}
			case err != nil || got != tc.want:
				t.Fatalf("resolvePort = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestUnknownPortNameIsClear(t *testing.T) {
	_, err := resolvePort(intstr.FromString("metrics"), &v1.Container{Name: "web"})
	if want := `port "metrics" of container "web": named port not found`; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
