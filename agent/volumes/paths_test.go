package volumes

import (
	"errors"
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path    string
		wantMsg string // "" when valid
	}{
		{"a", ""},
		{"a/b/c", ""},
		{"./a", ""},
		{"a..b", ""},
		{"a/..b", ""},
		{"", `invalid path: must not be empty: ""`},
		{"/a", "invalid path: must be relative path: /a"},
		{"..", "invalid path: must not contain '..': .."},
		{"a/../b", "invalid path: must not contain '..': a/../b"},
		{"..a", "invalid path: must not start with '..': ..a"},
		{"..data/x", "invalid path: must not start with '..': ..data/x"},
		{".", "invalid path: must name a file: ."},
		{strings.Repeat("x", 256), "invalid path: filenames must be less than or equal to 255 characters"},
		{strings.Repeat("x/", 2049), "invalid path: must be less than or equal to 4096 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := validatePath(tt.path)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("valid path refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantMsg || !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("got %v, want ErrInvalidPath %q", err, tt.wantMsg)
			}
		})
	}
}

func TestCleanPayload(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		want    []string // cleaned keys; nil when invalid
		wantErr bool
	}{
		{"cleans", []string{"./a", "b//c"}, []string{"a", "b/c"}, false},
		{"same file twice", []string{"a", "./a"}, nil, true},
		{"file and directory", []string{"a", "a/b"}, nil, true},
		{"file and deeper directory", []string{"a/b/c", "a"}, nil, true},
		{"siblings", []string{"a/b", "a/c"}, []string{"a/b", "a/c"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := map[string]File{}
			for _, k := range tt.keys {
				payload[k] = File{}
			}
			got, err := cleanPayload(payload)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidPath) {
					t.Fatalf("got %v, want ErrInvalidPath", err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %v, %v; want keys %v", got, err, tt.want)
			}
			for _, k := range tt.want {
				if _, ok := got[k]; !ok {
					t.Errorf("missing cleaned key %q in %v", k, got)
				}
			}
		})
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		p, base string
		want    bool
	}{
		{"/v", "/v", true},
		{"/v/a", "/v", true},
		{"/vx", "/v", false},
		{"/", "/v", false},
		{"/anything", "/", true},
	}
	for _, tt := range tests {
		if got := within(tt.p, tt.base); got != tt.want {
			t.Errorf("within(%q, %q) = %v, want %v", tt.p, tt.base, got, tt.want)
		}
	}
}
