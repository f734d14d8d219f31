package main

import _ "embed"

//go:embed pause/skiff-pause-arm64
var pauseArm64 []byte

func init() { pauseProgram = pauseArm64 }
