package host

import "os"

// PrivateDir makes dir, and makes it root's only (0700) if it exists
// with looser modes: a node's state (keys, pods' secrets, sockets) lives
// there.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
