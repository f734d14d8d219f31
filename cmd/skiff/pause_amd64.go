package main

import _ "embed"

//go:embed pause/skiff-pause-amd64
var pauseAmd64 []byte

func init() { pauseProgram = pauseAmd64 }
