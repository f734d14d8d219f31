package cri

import (
	"bytes"
	"io"
	"os"
)

// tailWindow is how much of the end of a log file TailLog reads.
const tailWindow = 64 << 10

// TailLog returns the text of the last n lines of a CRI log file (the
// "<time> <stream> <F|P> " prefixes taken off, partial records joined), cut
// to its last maxBytes bytes. Only the last 64 KiB of the file are read.
func TailLog(path string, n, maxBytes int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(0, info.Size()-tailWindow)
	data, err := io.ReadAll(io.NewSectionReader(f, off, info.Size()-off))
	if err != nil {
		return "", err
	}
	if off > 0 { // drop the first, probably cut, record
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	text := logText(data)
	lines := bytes.SplitAfter(text, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	text = bytes.Join(lines[max(0, len(lines)-n):], nil)
	return string(text[max(0, len(text)-maxBytes):]), nil
}

// logText is the text of CRI log records: a full record (F) ends a line,
// a partial one (P) continues on the next record.
func logText(data []byte) []byte {
	var out []byte
	for _, rec := range bytes.Split(data, []byte("\n")) {
		fields := bytes.SplitN(rec, []byte(" "), 4)
		if len(fields) < 4 {
			continue
		}
		out = append(out, fields[3]...)
		if string(fields[2]) == "F" {
			out = append(out, '\n')
		}
	}
	return out
}
