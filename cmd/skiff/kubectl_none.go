//go:build nokubectl

package main

import (
	"fmt"
	"os"
)

// runKubectl, in a skiff built with -tags nokubectl (a smaller binary;
// docs/perf.md says by how much), says that kubectl is not in it.
func runKubectl([]string) {
	fmt.Fprintln(os.Stderr, "Error: this skiff was built without kubectl (-tags nokubectl); use a kubectl binary")
	os.Exit(1)
}
