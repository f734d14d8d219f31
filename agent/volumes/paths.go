package volumes

import (
	"fmt"
	"path"
	"strings"
)

// Limits the kubelet puts on payload paths.
const (
	maxPathLength = 4096
	maxNameLength = 255
)

// validatePath checks a payload path the way the kubelet's atomic writer
// does: non-empty, relative, no ".." element, not starting with "..", and
// within the length limits. Names starting with ".." are the writer's own.
func validatePath(p string) error {
	invalid := func(format string, args ...any) error {
		return newError(ErrInvalidPath, "invalid path: "+fmt.Sprintf(format, args...), nil)
	}
	switch {
	case p == "":
		return invalid("must not be empty: %q", p)
	case path.IsAbs(p):
		return invalid("must be relative path: %s", p)
	case len(p) > maxPathLength:
		return invalid("must be less than or equal to %d characters", maxPathLength)
	}
	elems := strings.Split(p, "/")
	for _, e := range elems {
		if e == ".." {
			return invalid("must not contain '..': %s", p)
		}
		if len(e) > maxNameLength {
			return invalid("filenames must be less than or equal to %d characters", maxNameLength)
		}
	}
	if strings.HasPrefix(elems[0], "..") {
		return invalid("must not start with '..': %s", p)
	}
	if path.Clean(p) == "." {
		return invalid("must name a file: %s", p)
	}
	return nil
}

// cleanPayload validates every path of payload and returns it keyed by
// cleaned paths. Two keys naming the same file, or a file that is also
// another file's directory, are invalid.
func cleanPayload(payload map[string]File) (map[string]File, error) {
	clean := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		c := path.Clean(p)
		if _, dup := clean[c]; dup {
			return nil, newError(ErrInvalidPath, fmt.Sprintf("invalid path: %s is given twice", c), nil)
		}
		clean[c] = f
	}
	for p := range clean {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, ok := clean[dir]; ok {
				return nil, newError(ErrInvalidPath, fmt.Sprintf("invalid path: %s is both a file and the directory of %s", dir, p), nil)
			}
		}
	}
	return clean, nil
}

// hasBacksteps reports whether a slash-separated path has a ".." element,
// which the kubelet refuses in hostPath and subPath.
func hasBacksteps(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// within reports whether the clean absolute path p is base or below it.
func within(p, base string) bool {
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == base || strings.HasPrefix(p, base+"/")
}
