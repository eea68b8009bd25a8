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
	"net/url"
	"os"
	"regexp"
	"slices"
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
	var removed []string // the settings a credential was taken out of
	for _, kv := range resolved {
		v, cut := scrub(kv[1])
		if cut {
			removed = append(removed, kv[0])
		}
		settings[kv[0]] = v
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
					v, cut := scrub(v)
					if cut {
						removed = append(removed, f.Name)
					}
					keep = append(keep, v)
				}
			}
			settings[f.Name] = keep
			return
		}
		if redact.LooksLikeSecret(f.Value.String()) {
			return
		}
		v, cut := scrub(f.Value.String())
		if cut {
			removed = append(removed, f.Name)
		}
		settings[f.Name] = v
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
	if len(removed) > 0 {
		sort.Strings(removed)
		fmt.Fprintf(&buf, "# credentials were left out of %s (a URL's user:password@ or its key/token parameters): give them on the command line, or pass the key with --api-key-env\n",
			strings.Join(slices.Compact(removed), ", "))
	}
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := writePrivate(path, buf.Bytes()); err != nil {
		return badinput.Errorf("--%s: %v", SaveFlag, err)
	}
	return nil
}

// writePrivate writes b to path readable by its owner only: a scenario
// names targets and settings that are nobody else's business, and one saved
// by an older knee may still hold a password. A file already there is
// narrowed to 0600 before anything is written into it.
func writePrivate(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// secretParam names a query parameter that carries a credential.
var secretParam = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth|sig|credential|session)`)

// scrub takes credentials out of one saved value: the user info of every
// URL in it, and the query parameters of a URL whose names say they hold a
// key or a token (others, such as api-version, are kept: the run needs
// them). cut says whether anything was taken out.
func scrub(v string) (out string, cut bool) {
	out = redact.Text(v)
	if u, err := url.Parse(out); err == nil && u.Scheme != "" && u.Host != "" && u.RawQuery != "" {
		q, dropped := u.Query(), false
		for name := range q {
			if secretParam.MatchString(name) {
				q.Del(name)
				dropped = true
			}
		}
		if dropped {
			u.RawQuery = q.Encode()
			out = u.String()
		}
	}
	return out, out != v
}
