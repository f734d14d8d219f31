package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestPauseProgramUpToDate: the committed pause programs were built from
// the current cmd/skiff-pause (make pause), and the one embedded is an ELF
// executable for this architecture.
func TestPauseProgramUpToDate(t *testing.T) {
	src, err := os.ReadFile("../skiff-pause/main.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("pause/source.sha256")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != strings.TrimSpace(string(want)) {
		t.Fatalf("cmd/skiff-pause changed since the pause programs were built (source %s, built from %s): run make pause", got, want)
	}
	b, err := pauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if f.Machine != machine || f.Type != elf.ET_EXEC {
		t.Errorf("embedded pause program: %v %v, want an executable for %s", f.Machine, f.Type, runtime.GOARCH)
	}
}
