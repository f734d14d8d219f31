// Package deploy holds the files skiff is deployed with, embedded so that
// `skiff install` writes exactly what the repository keeps: the systemd
// units of deploy/systemd.
package deploy

import (
	"embed"
	"fmt"
)

//go:embed systemd/*.service
var units embed.FS

// Unit is the systemd unit for role ("server" or "agent") and its name.
func Unit(role string) (name string, data []byte, err error) {
	name = "skiff-" + role + ".service"
	data, err = units.ReadFile("systemd/" + name)
	if err != nil {
		return "", nil, fmt.Errorf("no systemd unit for role %q", role)
	}
	return name, data, nil
}
