package main

import (
	"embed"
	"errors"
	"io/fs"
)

//go:embed pause
var pauseDir embed.FS

// pauseBinary is the skiff-pause program built into this binary.
func pauseBinary() ([]byte, error) {
	b, err := fs.ReadFile(pauseDir, "pause/skiff-pause")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("this skiff was built without the pause program: build it with `make build`")
	}
	return b, err
}
