package envvars

import "strings"

// Expand replaces variable references in s as Kubernetes does for container
// env values, command and args:
//
//   - $(NAME) becomes mapping's value for NAME when mapping reports it
//     defined, and stays verbatim ("$(NAME)") when not;
//   - $$ becomes a single $, so $$(NAME) is the literal text $(NAME);
//   - an unterminated $( and a $ not followed by ( or $ are kept as written.
//
// A reference ends at the first ')', and replaced values are not expanded
// again. Expand never fails.
func Expand(s string, mapping func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			ref := s[i : i+end+3]
			if v, ok := mapping(ref[2 : len(ref)-1]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += end + 2
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ExpandCommand expands $(NAME) references in a container's command or args
// against env, the container's environment as For returns it (KEY=VALUE;
// for a repeated name the last entry counts), as the kubelet does before
// it creates the container. Names not in env stay verbatim. An empty list
// gives nil; list is not modified.
func ExpandCommand(list []string, env []string) []string {
	if len(list) == 0 {
		return nil
	}
	values := make(map[string]string, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		values[name] = value
	}
	mapping := func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Expand(s, mapping)
	}
	return out
}
