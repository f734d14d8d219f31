package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docFiles are the README and docs/*.md.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob("../../docs/*.md")
	out := map[string]string{}
	for _, p := range append(paths, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}

// TestDocumentedFlagsExist: every flag a skiff command line in the docs
// gives (`skiff server --x`, `skiff agent ... --y` in code or text) is a
// flag of that command.
func TestDocumentedFlagsExist(t *testing.T) {
	root := rootCommand()
	commandLine := regexp.MustCompile(`skiff ((?:[a-z][a-z-]* )*)((?:[^\x60\n|]*?--[a-z][a-z0-9-]*)+)`)
	flag := regexp.MustCompile(`(?:^|\s|\[)--([a-z][a-z0-9-]*)`)
	checked := 0
	for file, text := range docFiles(t) {
		for _, m := range commandLine.FindAllStringSubmatch(text, -1) {
			cmd, _, err := root.Find(strings.Fields(m[1]))
			if err != nil || cmd == root || cmd.DisableFlagParsing {
				continue // not a skiff command, or kubectl/crictl/ctr's own flags
			}
			for _, f := range flag.FindAllStringSubmatch(m[2], -1) {
				checked++
				if lookupFlag(cmd, f[1]) == nil && f[1] != "help" {
					t.Errorf("%s: %q gives --%s, which skiff %s does not have", file, strings.TrimSpace(m[0]), f[1], cmd.Name())
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags of skiff command lines found in the docs", checked)
	}
}

// TestFlagTables: docs/flags.md's tables of `skiff server` and `skiff agent`
// flags list each flag of the command (in a row's first cell or, as a
// companion of that flag, in its text), and only those; the server's
// in-process agent takes the agent's flags, so the server's are in either.
func TestFlagTables(t *testing.T) {
	flagsDoc := docFiles(t)["flags.md"]
	row := regexp.MustCompile("(?m)^\\| (`--.*)$")
	flag := regexp.MustCompile("`--([a-z][a-z0-9-]*)`")
	listed := map[string]map[string]bool{}
	for _, name := range []string{"server", "agent"} {
		cmd, _, _ := rootCommand().Find([]string{name})
		listed[name] = map[string]bool{}
		for _, cell := range row.FindAllStringSubmatch(sectionOf(flagsDoc, "## `skiff "+name+"` flags"), -1) {
			for _, m := range flag.FindAllStringSubmatch(cell[1], -1) {
				listed[name][m[1]] = true
				if lookupFlag(cmd, m[1]) == nil {
					t.Errorf("docs/flags.md lists --%s under skiff %s, which has no such flag", m[1], name)
				}
			}
		}
	}
	for _, name := range []string{"server", "agent"} {
		cmd, _, _ := rootCommand().Find([]string{name})
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !listed[name][f.Name] && !(name == "server" && listed["agent"][f.Name]) && f.Name != "help" {
				t.Errorf("docs/flags.md's skiff %s flags table lacks --%s", name, f.Name)
			}
		})
	}
}

// sectionOf is the text from the heading to the next heading of its level
// or above.
func sectionOf(text, heading string) string {
	_, rest, ok := strings.Cut(text, heading+"\n")
	if !ok {
		return ""
	}
	if i := regexp.MustCompile(`(?m)^##? `).FindStringIndex(rest); i != nil {
		return rest[:i[0]]
	}
	return rest
}

// lookupFlag finds a flag of cmd, its own or inherited.
func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}
