package main

import "errors"

// pauseProgram is the skiff-pause program of this binary's architecture
// (pause_<arch>.go embeds it from cmd/skiff/pause).
var pauseProgram []byte

// pauseBinary is the skiff-pause program built into this binary.
func pauseBinary() ([]byte, error) {
	if len(pauseProgram) == 0 {
		return nil, errors.New("this skiff has no pause program for its architecture (amd64 and arm64 have one)")
	}
	return pauseProgram, nil
}
