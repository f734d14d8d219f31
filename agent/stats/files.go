package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// files reads numbers out of kernel files, keeping the first error: after
// one, every read returns zero and reads nothing, so that a reader can read
// several files and check once.
type files struct{ err error }

// read returns the file's content, or nil after an error.
func (f *files) read(path string) []byte {
	if f.err != nil {
		return nil
	}
	data, err := os.ReadFile(path)
	f.err = err // *fs.PathError already names the file
	return data
}

// uint reads a file holding one unsigned number.
func (f *files) uint(path string) uint64 {
	data := f.read(path)
	if f.err != nil {
		return 0
	}
	return f.parse(path, data)
}

// unlimited is the size from which a memory limit means none: v1 reports
// "no limit" as the largest page-aligned int64, not as MaxInt64. The
// kubelet uses the same bound.
const unlimited = 1 << 62

// limit reads a memory limit, v1's memory.limit_in_bytes or v2's
// memory.max, and returns 0 for none ("max", or v1's huge number).
func (f *files) limit(path string) uint64 {
	data := f.read(path)
	if f.err != nil || string(bytes.TrimSpace(data)) == "max" {
		return 0
	}
	if n := f.parse(path, data); n < unlimited {
		return n
	}
	return 0
}

// parse parses the number that is the content of the file at path.
func (f *files) parse(path string, data []byte) uint64 {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil {
		f.err = fmt.Errorf("parse %s: %w", path, err)
		return 0
	}
	return n
}

// keyed reads a flat-keyed cgroup file ("<key> <number>" per line:
// cpu.stat, memory.stat). Lines that are not a key and a number are
// skipped; a missing key reads as 0.
func (f *files) keyed(path string) map[string]uint64 {
	data := f.read(path)
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		out[fields[0]] = n
	}
	return out
}
