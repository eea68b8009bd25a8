package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// parseAnywhere parses flags anywhere on the line, as Go command-line
// tools commonly do (knee diagnose FILE --json): the flag package stops at
// the first positional argument, so parsing resumes after each one. "--"
// ends the flags; everything after it is positional. Afterwards fs.Args()
// holds the positional arguments in order.
//
// Errors are one line naming the flag and the form it wants, never the
// flag package's full usage dump: -h shows that.
func parseAnywhere(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	restore := func() { fs.Usage = usage; fs.SetOutput(out) }
	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			restore()
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return errHelp
			}
			return &UsageError{Err: flagError(fs, err)}
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		if consumed := len(rest) - len(left); consumed > 0 && rest[consumed-1] == "--" {
			positional = append(positional, left...)
			break
		}
		positional = append(positional, left[0])
		rest = left[1:]
	}
	restore()
	// Parsing just "--" and the positionals leaves them as fs.Args().
	return fs.Parse(append([]string{"--"}, positional...))
}

var (
	reInvalidValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	reUndefined    = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reNeedsArg     = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError rewrites the flag package's parse errors into knee's form:
// "--rate abc: want a number such as 8 or 2.5".
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := reInvalidValue.FindStringSubmatch(msg); m != nil {
		value, name, why := m[1], m[2], m[3]
		want := wantOf(fs.Lookup(name))
		switch why {
		case "parse error", "invalid syntax":
			if want == "" {
				want = "a valid value"
			}
			return fmt.Errorf("--%s %s: want %s", name, shown(value), want)
		case "value out of range":
			return fmt.Errorf("--%s %s: out of range (want %s)", name, shown(value), want)
		}
		return fmt.Errorf("--%s %s: %s", name, shown(value), redactSecrets(why))
	}
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		name := m[1]
		hint := ""
		if near := nearestFlag(fs, name); near != "" {
			hint = fmt.Sprintf("; did you mean --%s?", near)
		}
		if looksLikeSecret(name) {
			name = "(a value that looks like a credential, not shown)"
		}
		return fmt.Errorf("unknown flag --%s%s (see %s -h)", name, hint, fs.Name())
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		name := m[1]
		if want := wantOf(fs.Lookup(name)); want != "" {
			return fmt.Errorf("--%s needs a value: %s", name, want)
		}
		return fmt.Errorf("--%s needs a value", name)
	}
	return errors.New(redactSecrets(msg))
}

// wantOf says in words what form a flag's value takes, from its type.
func wantOf(fl *flag.Flag) string {
	if fl == nil {
		return ""
	}
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case float64:
		return "a number such as 8 or 2.5"
	case int, int64, uint, uint64:
		return "a whole number such as 16"
	case time.Duration:
		return "a duration such as 500ms, 30s or 2m"
	case bool:
		return "true or false (or just --" + fl.Name + ")"
	}
	return ""
}

// nearestFlag is the registered flag closest to name (a typo's likely
// intent), or "" when none is close.
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(fl *flag.Flag) {
		if d := editDistance(name, fl.Name); d < bestD || (strings.HasPrefix(fl.Name, name) && len(name) >= 3 && bestD > 1) {
			best, bestD = fl.Name, min(d, 1)
		}
	})
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// subcommandAt is the index of word in args as a subcommand — not a flag's
// value — or -1: flags may come before a subcommand as before any other
// positional argument. A flag fs does not define is taken to have a value.
func subcommandAt(fs *flag.FlagSet, args []string, word string) int {
	for i, a := range args {
		if a == "--" {
			return -1
		}
		if a != word {
			continue
		}
		if i == 0 {
			return 0
		}
		prev := args[i-1]
		if !strings.HasPrefix(prev, "-") || strings.Contains(prev, "=") {
			return i
		}
		if fl := fs.Lookup(strings.TrimLeft(prev, "-")); fl != nil {
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				return i
			}
		}
	}
	return -1
}
