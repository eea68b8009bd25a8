// Package scenario reads and writes scenario files (SPEC §4): a run's
// settings as YAML, one key per flag:
//
//	rate: 20
//	arrival: gamma
//	burstiness: 0.5
//	input-tokens: normal:1024,256
//	slo: ["p95(ttft)<2s", "p99(itl)<100ms"]
//	seed: 42
//
// --scenario-file loads one before the command line is read, so flags given
// on the command line override it; --save-scenario writes the resolved
// settings (the seed included) so a run can be repeated exactly.
package scenario

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The flags that name scenario files.
const (
	FileFlag = "scenario-file"
	SaveFlag = "save-scenario"
)

// maxScenarioBytes bounds a scenario file: one line per flag.
const maxScenarioBytes = 1 << 20

// Lister is a repeatable flag's value: saved as a YAML list.
type Lister interface{ Values() []string }

// Apply loads the --scenario-file given, if any, into the
// command's flags that the command line left unset: the command line wins.
func Apply(cmd *cobra.Command) error {
	fs := cmd.Flags()
	path := fs.Lookup(FileFlag).Value.String()
	if path == "" {
		return nil
	}
	onLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onLine[f.Name] = true })
	b, err := badinput.ReadFile(path, maxScenarioBytes, "a scenario: one key per flag, e.g. \"rate: 20\"")
	if err != nil {
		return badinput.Errorf("--%s: %w", FileFlag, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return badinput.Errorf("--%s %s: not YAML: %v", FileFlag, path, err)
	}
	if len(doc.Content) == 0 {
		return badinput.Errorf("--%s %s: empty file; want one key per flag, e.g. \"rate: 20\"", FileFlag, path)
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return badinput.Errorf("--%s %s:%d: want a mapping of flag names to values, e.g. \"rate: 20\"", FileFlag, path, m.Line)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		name := strings.TrimLeft(key.Value, "-")
		if name == FileFlag || name == SaveFlag || fs.Lookup(name) == nil {
			return badinput.Errorf("--%s %s:%d: %q is not a setting of %s (see %s -h)", FileFlag, path, key.Line, key.Value, cmd.CommandPath(), cmd.CommandPath())
		}
		if onLine[name] {
			continue
		}
		var values []string
		switch val.Kind {
		case yaml.ScalarNode:
			values = []string{val.Value}
		case yaml.SequenceNode:
			for _, item := range val.Content {
				if item.Kind != yaml.ScalarNode {
					return badinput.Errorf("--%s %s:%d: %s: want a value or a list of values", FileFlag, path, item.Line, name)
				}
				values = append(values, item.Value)
			}
		default:
			return badinput.Errorf("--%s %s:%d: %s: want a value or a list of values", FileFlag, path, val.Line, name)
		}
		for _, v := range values {
			if err := fs.Set(name, v); err != nil {
				return badinput.Errorf("--%s %s:%d: %s %q: %v", FileFlag, path, val.Line, name, v, err)
			}
		}
	}
	return nil
}

// Save writes every setting given (from a file or the command line)
// to path as a scenario file, with the resolved values of the workload
// settings left at their defaults (resolved: flag name to value), so the
// file states the whole workload even if a default changes.
func Save(fs *pflag.FlagSet, path string, resolved [][2]string, version string) error {
	settings := map[string]any{}
	for _, kv := range resolved {
		settings[kv[0]] = kv[1]
	}
	fs.Visit(func(f *pflag.Flag) {
		if f.Name == FileFlag || f.Name == SaveFlag {
			return
		}
		// A credential given by mistake is never written down. A list is
		// judged item by item: two objectives joined read as one long
		// random-looking word, and were once left out for it.
		if list, ok := f.Value.(Lister); ok {
			var keep []string
			for _, v := range list.Values() {
				if !redact.LooksLikeSecret(v) {
					keep = append(keep, v)
				}
			}
			settings[f.Name] = keep
			return
		}
		if redact.LooksLikeSecret(f.Value.String()) {
			return
		}
		settings[f.Name] = f.Value.String()
	})
	names := make([]string, 0, len(settings))
	for n := range settings {
		names = append(names, n)
	}
	sort.Strings(names)
	var doc yaml.Node
	doc.Kind = yaml.MappingNode
	for _, n := range names {
		var k, v yaml.Node
		k.SetString(n)
		if err := v.Encode(settings[n]); err != nil {
			return err
		}
		doc.Content = append(doc.Content, &k, &v)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s scenario, written by knee %s; repeat with: %s --%s %s\n", fs.Name(), version, fs.Name(), FileFlag, path)
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return badinput.Errorf("--%s: %v", SaveFlag, err)
	}
	return nil
}
