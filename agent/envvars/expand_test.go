package envvars

import (
	"reflect"
	"slices"
	"testing"
)

func TestExpand(t *testing.T) {
	defined := map[string]string{"A": "alpha", "B": "beta", "REF": "$(A)", "EMPTY": ""}
	mapping := func(name string) (string, bool) {
		v, ok := defined[name]
		return v, ok
	}
	tests := []struct{ name, in, want string }{
		{"no reference", "plain text", "plain text"},
		{"empty", "", ""},
		{"defined", "$(A)", "alpha"},
		{"inside text", "x-$(A)-y", "x-alpha-y"},
		{"two references", "$(A)$(B)", "alphabeta"},
		{"defined as empty", "[$(EMPTY)]", "[]"},
		{"undefined stays verbatim", "x $(NOPE) y", "x $(NOPE) y"},
		{"empty name stays verbatim", "$()", "$()"},
		{"escaped operator", "cost $$5", "cost $5"},
		{"escaped reference", "$$(A)", "$(A)"},
		{"escape then reference", "$$$(A)", "$alpha"},
		{"two escapes", "$$$$", "$$"},
		{"unterminated", "$(A", "$(A"},
		{"unterminated then escape", "$(A $$", "$(A $"},
		{"reference ends at first close", "$(A $(B)", "$(A $(B)"},
		{"lone operator at end", "a$", "a$"},
		{"lone operator alone", "$", "$"},
		{"operator before letter", "$A", "$A"},
		{"operator before close", "$)", "$)"},
		{"value not expanded again", "$(REF)", "$(A)"},
		{"non-ASCII kept", "é$(A)ü", "éalphaü"},
		{"operator before non-ASCII", "$é", "$é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Expand(tt.in, mapping); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestExpandCommand(t *testing.T) {
	env := []string{"HOST=db", "PORT=5432", "OPTS=a=b", "HOST=db2"}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"nil", nil, nil},
		{"empty is nil", []string{}, nil},
		{"references", []string{"psql", "-h", "$(HOST)", "-p$(PORT)"}, []string{"psql", "-h", "db2", "-p5432"}},
		{"value with =", []string{"--opts=$(OPTS)"}, []string{"--opts=a=b"}},
		{"undefined and escaped", []string{"$(NOPE)", "$$(HOST)"}, []string{"$(NOPE)", "$(HOST)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := ExpandCommand(tt.in, env)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ExpandCommand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("input modified: %q", tt.in)
			}
		})
	}
}
