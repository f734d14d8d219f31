package envvars

// vars is a container environment under construction. Setting a name that
// is already set replaces it: the earlier entry is dropped and the name
// moves to the end, so each name appears once, with its last value, at the
// place it was last set. This is where duplicate names are resolved.
type vars struct {
	list  []envVar
	index map[string]int // name → position of its live entry in list
}

type envVar struct {
	name, value string
	dropped     bool
}

func newVars() *vars { return &vars{index: map[string]int{}} }

func (v *vars) set(name, value string) {
	if i, ok := v.index[name]; ok {
		v.list[i].dropped = true
	}
	v.index[name] = len(v.list)
	v.list = append(v.list, envVar{name: name, value: value})
}

// lookup is the mapping Expand uses: the value a name has so far.
func (v *vars) lookup(name string) (string, bool) {
	i, ok := v.index[name]
	if !ok {
		return "", false
	}
	return v.list[i].value, true
}

// strings returns the live entries as KEY=VALUE, in order.
func (v *vars) strings() []string {
	out := make([]string, 0, len(v.index))
	for _, e := range v.list {
		if !e.dropped {
			out = append(out, e.name+"="+e.value)
		}
	}
	return out
}
