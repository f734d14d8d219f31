package deploy

import (
	"bytes"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
)

// TestUnits checks the units have what a production node service needs.
func TestUnits(t *testing.T) {
	for role, exec := range map[string]string{"server": "/usr/local/bin/skiff server", "agent": "/usr/local/bin/skiff agent"} {
		name, data, err := Unit(role)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := unit.DeserializeOptions(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := map[string]string{}
		for _, o := range opts {
			got[o.Section+"."+o.Name] = o.Value
		}
		for key, want := range map[string]string{
			"Service.Type": "notify", "Service.ExecStart": exec, "Service.Restart": "always",
			"Service.KillMode": "process", "Service.Delegate": "yes", "Service.LimitNOFILE": "1048576",
			"Service.TasksMax": "infinity", "Install.WantedBy": "multi-user.target",
			"Unit.After": "network-online.target",
		} {
			if got[key] != want {
				t.Errorf("%s: %s=%q, want %q", name, key, got[key], want)
			}
		}
	}
	if _, _, err := Unit("etcd"); err == nil {
		t.Error("a unit for role etcd")
	}
}
