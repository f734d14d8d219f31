package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// defaultConfigPath is where `skiff server` and `skiff agent` read their
// settings from unless --config names another file.
const defaultConfigPath = "/etc/skiff/config.yaml"

// envPrefix starts the environment variables that set flags:
// SKIFF_NODE_LABELS sets --node-labels.
const envPrefix = "SKIFF_"

// addConfigFlag gives cmd the --config flag: its flags may then also be set
// in that YAML file and in SKIFF_<FLAG> variables (applyConfig).
func addConfigFlag(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[configAnnotation] = "true"
	cmd.Flags().String("config", defaultConfigPath, "YAML file of settings, one key per flag (node-labels: {a: b}, tls-san: [x, y]); a flag given on the command line wins over SKIFF_<FLAG> in the environment, which wins over the file")
}

// configAnnotation marks the commands addConfigFlag gave --config.
const configAnnotation = "skiff.io/config-file"

// applyConfig sets the flags of cmd that the command line left alone from
// the environment, then from the config file, if cmd has --config from
// addConfigFlag. A
// missing default file is no error; a missing named one, an unknown key or
// a bad value is, naming the key.
func applyConfig(cmd *cobra.Command, getenv func(string) string) error {
	cf := cmd.Flags().Lookup("config")
	if cf == nil || cmd.Annotations[configAnnotation] == "" {
		return nil
	}
	file, err := readConfig(cf.Value.String(), cf.Changed)
	if err != nil {
		return err
	}
	flags, given := map[string]*pflag.Flag{}, map[string]bool{}
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		fs.VisitAll(func(f *pflag.Flag) { flags[f.Name], given[f.Name] = f, f.Changed })
	}
	given["config"] = true
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		env := envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if v := getenv(env); v != "" && !given[name] {
			if err := cmd.Flags().Set(name, v); err != nil {
				return fmt.Errorf("%s: %w", env, err)
			}
			given[name] = true
		}
	}
	for _, key := range slices.Sorted(maps.Keys(file.values)) {
		if _, ok := flags[key]; !ok || key == "config" {
			return file.errorf(key, "unknown key %q (not a flag of skiff %s)", key, cmd.Name())
		}
		if given[key] {
			continue
		}
		value, err := flagValue(file.values[key])
		if err == nil {
			err = cmd.Flags().Set(key, value)
		}
		if err != nil {
			return file.errorf(key, "%s: %v", key, err)
		}
	}
	return nil
}

// configFile is the config file's settings, by key, with the line of each.
type configFile struct {
	path   string
	values map[string]any
	lines  map[string]int
}

// errorf is an error about key, naming the file and the key's line.
func (c configFile) errorf(key string, format string, args ...any) error {
	return fmt.Errorf("config file %s:%d: %s", c.path, c.lines[key], fmt.Sprintf(format, args...))
}

// readConfig reads the YAML map at path; a missing file is empty unless
// it was named explicitly.
func readConfig(path string, explicit bool) (configFile, error) {
	file := configFile{path: path, values: map[string]any{}, lines: map[string]int{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return file, nil
	}
	if err != nil {
		return file, fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return file, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return file, nil // empty
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return file, fmt.Errorf("config file %s:%d: want a map of flag names to values", path, top.Line)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, value := top.Content[i], top.Content[i+1]
		var v any
		if err := value.Decode(&v); err != nil {
			return file, fmt.Errorf("config file %s:%d: %s: %w", path, key.Line, key.Value, err)
		}
		file.values[key.Value], file.lines[key.Value] = v, key.Line
	}
	return file, nil
}

// flagValue is a YAML value as a flag's text: a scalar as written, a list
// joined with commas, a map as key=value pairs joined with commas.
func flagValue(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			s, err := scalar(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(t)) {
			s, err := scalar(t[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, k+"="+s)
		}
		return strings.Join(parts, ","), nil
	}
	return scalar(v)
}

func scalar(v any) (string, error) {
	switch v.(type) {
	case []any, map[string]any:
		return "", fmt.Errorf("nested value %v: want a scalar", v)
	case float64:
		return strconv.FormatFloat(v.(float64), 'f', -1, 64), nil
	}
	return fmt.Sprint(v), nil
}
