package cmdhelp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// FlagError rewrites pflag's parse errors into knee's one-line form, bad
// input (exit 2): "--rate abc: want a number such as 8 or 2.5",
// "unknown flag --rat; did you mean --rate? (see knee bench -h)". A value
// that looks like a credential is never echoed.
func FlagError(cmd *cobra.Command, err error) error {
	fs := cmd.Flags()
	var notExist *pflag.NotExistError
	var needsValue *pflag.ValueRequiredError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &notExist):
		name := notExist.GetSpecifiedName()
		if name == "" {
			return badinput.Errorf("unknown flag -%s (see %s -h)", notExist.GetSpecifiedShortnames(), cmd.CommandPath())
		}
		hint := ""
		if near := nearestFlag(fs, name); near != "" {
			hint = fmt.Sprintf("; did you mean --%s?", near)
		}
		if redact.LooksLikeSecret(name) {
			name = redact.Hidden
		}
		return badinput.Errorf("unknown flag --%s%s (see %s -h)", name, hint, cmd.CommandPath())
	case errors.As(err, &needsValue):
		fl := needsValue.GetFlag()
		if want := wantOf(fl); want != "" {
			return badinput.Errorf("--%s needs a value: %s", fl.Name, want)
		}
		return badinput.Errorf("--%s needs a value", fl.Name)
	case errors.As(err, &invalid):
		fl, value := invalid.GetFlag(), invalid.GetValue()
		want := wantOf(fl)
		var num *strconv.NumError
		if errors.As(err, &num) {
			if want == "" {
				want = "a valid value"
			}
			if errors.Is(num.Err, strconv.ErrRange) {
				return badinput.Errorf("--%s %s: out of range (want %s)", fl.Name, redact.Quoted(value), want)
			}
			return badinput.Errorf("--%s %s: want %s", fl.Name, redact.Quoted(value), want)
		}
		why := invalid.Unwrap()
		if why == nil {
			why = err
		}
		if want != "" && strings.Contains(why.Error(), "invalid") {
			return badinput.Errorf("--%s %s: want %s", fl.Name, redact.Quoted(value), want)
		}
		return badinput.Errorf("--%s %s: %s", fl.Name, redact.Quoted(value), redact.Secrets(why.Error()))
	}
	return &badinput.Error{Err: errors.New(redact.Secrets(err.Error()))}
}

// wantOf says in words what form a flag's value takes, from its type.
func wantOf(fl *pflag.Flag) string {
	if fl == nil {
		return ""
	}
	switch fl.Value.Type() {
	case "float64", "float32":
		return "a number such as 8 or 2.5"
	case "int", "int64", "int32", "uint", "uint64":
		return "a whole number such as 16"
	case "duration":
		return "a duration such as 500ms, 30s or 2m"
	case "bool":
		return "true or false (or just --" + fl.Name + ")"
	}
	return ""
}

// nearestFlag is the flag of fs a mistyped name most likely meant, or ""
// when none is close: within one edit for short names, two for longer
// ones (so "db" is not taken for "tp"), or a prefix of at least three
// letters ("--max-num" for --max-num-seqs).
func nearestFlag(fs *pflag.FlagSet, name string) string {
	limit := 1
	if len(name) >= 6 {
		limit = 2
	}
	if len(name) <= 2 {
		limit = 0
	}
	best, bestD := "", limit+1
	fs.VisitAll(func(fl *pflag.Flag) {
		d := editDistance(name, fl.Name)
		if d > limit && len(name) >= 3 && strings.HasPrefix(fl.Name, name) {
			d = limit // a prefix counts as the farthest typo allowed
		}
		if d < bestD {
			best, bestD = fl.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b.
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
