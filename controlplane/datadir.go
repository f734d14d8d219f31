package controlplane

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiff-lab/skiff/host"
)

// secureDataDir makes the server's state private to root, whatever an
// older skiff or an administrator left: <data-dir> and <data-dir>/server
// 0700 (created so if missing), and every key under server/tls and the
// join token 0600.
func secureDataDir(dataDir string) error {
	server := filepath.Join(dataDir, "server")
	for _, dir := range []string{dataDir, server} {
		if err := host.PrivateDir(dir); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(filepath.Join(server, "tls"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".key") {
			return err
		}
		return os.Chmod(path, 0o600)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Chmod(filepath.Join(server, "token"), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
