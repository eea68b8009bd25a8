package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// knee completion bash|zsh|fish prints a shell completion script. The
// commands and their flags come from the command table and from each
// command's own flag set (each is asked for -h with its output discarded),
// so the scripts never go stale.

func init() {
	commands["completion"] = command{"print a shell completion script: knee completion bash|zsh|fish", runCompletion}
}

func runCompletion(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "completion")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: knee completion bash|zsh|fish")
		fmt.Fprintln(w, "\nPrints a completion script for the shell. To enable it:")
		fmt.Fprintln(w, "  bash:  source <(knee completion bash)          (or save it under /etc/bash_completion.d/knee)")
		fmt.Fprintln(w, "  zsh:   knee completion zsh > \"${fpath[1]}/_knee\"   (then restart zsh)")
		fmt.Fprintln(w, "  fish:  knee completion fish > ~/.config/fish/completions/knee.fish")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return Usagef("want one shell: bash, zsh or fish (got %d arguments)", fs.NArg())
	}
	specs := completionSpecs(ctx)
	switch fs.Arg(0) {
	case "bash":
		writeBashCompletion(env.Stdout, specs)
	case "zsh":
		writeZshCompletion(env.Stdout, specs)
	case "fish":
		writeFishCompletion(env.Stdout, specs)
	default:
		return Usagef("shell %s: want bash, zsh or fish", shown(fs.Arg(0)))
	}
	return nil
}

// cmdSpec is one command as completion sees it.
type cmdSpec struct {
	name, summary string
	flags         []flagSpec
}

type flagSpec struct {
	name, usage string
	takesValue  bool
	values      []string // fixed choices, when known
}

// flagChoices are the values of flags that take one of a few words.
var flagChoices = map[string][]string{
	"api":        {"chat", "completions"},
	"arrival":    {"constant", "poisson", "gamma"},
	"ignore-eos": {"auto", "true", "false"},
	"format":     {"text", "md", "csv", "json", "html"},
	"tokenizer":  {"cl100k_base", "o200k_base"},
}

// completionSpecs asks every command for -h, capturing its flag set.
func completionSpecs(ctx context.Context) []cmdSpec {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var specs []cmdSpec
	for _, n := range names {
		spec := cmdSpec{name: n, summary: commands[n].summary}
		seen := map[string]bool{}
		capture := func(fs *flag.FlagSet) {
			fs.VisitAll(func(fl *flag.Flag) {
				if seen[fl.Name] {
					return
				}
				seen[fl.Name] = true
				bf, isBool := fl.Value.(interface{ IsBoolFlag() bool })
				spec.flags = append(spec.flags, flagSpec{name: fl.Name, usage: fl.Usage,
					takesValue: !(isBool && bf.IsBoolFlag()), values: flagChoices[fl.Name]})
			})
		}
		var captured []*flag.FlagSet
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" },
			onFlagSet: func(fs *flag.FlagSet) { captured = append(captured, fs) }}
		// Ask with -h; knee sim also has knee sim sweep, whose flags join sim's.
		asks := [][]string{{"-h"}}
		if n == "sim" {
			asks = append(asks, []string{"sweep", "-h"})
		}
		for _, a := range asks {
			captured = nil
			_ = commands[n].run(ctx, env, a)
			for _, fs := range captured {
				capture(fs)
			}
		}
		sort.Slice(spec.flags, func(i, j int) bool { return spec.flags[i].name < spec.flags[j].name })
		specs = append(specs, spec)
	}
	return specs
}

// shortUsage is a flag's usage cut to its first clause, without the
// characters the shells' description syntax gives meaning to.
func shortUsage(s string) string {
	if i := strings.Index(s, ";"); i > 0 {
		s = s[:i]
	}
	s = strings.NewReplacer("[", "(", "]", ")", ":", " -", "'", "’", "\"", "", "`", "", "$", "", "\\", "").Replace(s)
	if r := []rune(s); len(r) > 70 {
		s = string(r[:70])
		if i := strings.LastIndex(s, " "); i > 40 {
			s = s[:i]
		}
		s += "…"
	}
	return strings.TrimSpace(s)
}

func writeBashCompletion(w io.Writer, specs []cmdSpec) {
	var names []string
	for _, s := range specs {
		names = append(names, s.name)
	}
	fmt.Fprintln(w, "# bash completion for knee; enable with: source <(knee completion bash)")
	fmt.Fprintln(w, "_knee() {")
	fmt.Fprintln(w, `    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" opts="" choices=""`)
	fmt.Fprintln(w, `    if [[ $COMP_CWORD -eq 1 ]]; then`)
	fmt.Fprintf(w, "        COMPREPLY=($(compgen -W %q -- \"$cur\"))\n", strings.Join(names, " ")+" --version --help")
	fmt.Fprintln(w, "        return")
	fmt.Fprintln(w, "    fi")
	fmt.Fprintln(w, `    case "${COMP_WORDS[1]}" in`)
	for _, s := range specs {
		var opts []string
		for _, f := range s.flags {
			opts = append(opts, "--"+f.name)
		}
		if s.name == "completion" {
			opts = append(opts, "bash", "zsh", "fish")
		}
		if s.name == "sim" {
			opts = append(opts, "sweep")
		}
		fmt.Fprintf(w, "        %s) opts=%q ;;\n", s.name, strings.Join(opts, " "))
	}
	fmt.Fprintln(w, "    esac")
	fmt.Fprintln(w, `    case "$prev" in`)
	keys := make([]string, 0, len(flagChoices))
	for k := range flagChoices {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "        --%s) choices=%q ;;\n", k, strings.Join(flagChoices[k], " "))
	}
	fmt.Fprintln(w, "    esac")
	fmt.Fprintln(w, `    if [[ -n "$choices" ]]; then`)
	fmt.Fprintln(w, `        COMPREPLY=($(compgen -W "$choices" -- "$cur"))`)
	fmt.Fprintln(w, `    elif [[ "$cur" == -* || "${COMP_WORDS[1]}" == completion ]]; then`)
	fmt.Fprintln(w, `        COMPREPLY=($(compgen -W "$opts" -- "$cur"))`)
	fmt.Fprintln(w, "    else")
	fmt.Fprintln(w, `        COMPREPLY=($(compgen -f -- "$cur"))`)
	fmt.Fprintln(w, "    fi")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "complete -o default -F _knee knee")
}

func writeZshCompletion(w io.Writer, specs []cmdSpec) {
	fmt.Fprintln(w, "#compdef knee")
	fmt.Fprintln(w, "# zsh completion for knee; install with: knee completion zsh > \"${fpath[1]}/_knee\"")
	fmt.Fprintln(w, "_knee() {")
	fmt.Fprintln(w, "    local -a cmds")
	fmt.Fprintln(w, "    cmds=(")
	for _, s := range specs {
		fmt.Fprintf(w, "        '%s:%s'\n", s.name, shortUsage(s.summary))
	}
	fmt.Fprintln(w, "    )")
	fmt.Fprintln(w, "    if (( CURRENT == 2 )); then")
	fmt.Fprintln(w, "        _describe 'command' cmds")
	fmt.Fprintln(w, "        return")
	fmt.Fprintln(w, "    fi")
	fmt.Fprintln(w, "    local cmd=$words[2]")
	fmt.Fprintln(w, "    shift words; (( CURRENT-- ))")
	fmt.Fprintln(w, "    case $cmd in")
	for _, s := range specs {
		fmt.Fprintf(w, "        %s)\n            _arguments -s \\\n", s.name)
		for _, f := range s.flags {
			switch {
			case len(f.values) > 0:
				fmt.Fprintf(w, "                '--%s=[%s]:value:(%s)' \\\n", f.name, shortUsage(f.usage), strings.Join(f.values, " "))
			case f.takesValue:
				fmt.Fprintf(w, "                '--%s=[%s]:value:_files' \\\n", f.name, shortUsage(f.usage))
			default:
				fmt.Fprintf(w, "                '--%s[%s]' \\\n", f.name, shortUsage(f.usage))
			}
		}
		switch s.name {
		case "completion":
			fmt.Fprintln(w, "                '1:shell:(bash zsh fish)'")
		case "sim":
			fmt.Fprintln(w, "                '1::subcommand:(sweep)'")
		default:
			fmt.Fprintln(w, "                '*:file:_files'")
		}
		fmt.Fprintln(w, "            ;;")
	}
	fmt.Fprintln(w, "    esac")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, `if [[ "$funcstack[1]" == "_knee" ]]; then _knee "$@"; else compdef _knee knee; fi`)
}

func writeFishCompletion(w io.Writer, specs []cmdSpec) {
	fmt.Fprintln(w, "# fish completion for knee; install with: knee completion fish > ~/.config/fish/completions/knee.fish")
	fmt.Fprintln(w, "complete -c knee -f")
	for _, s := range specs {
		fmt.Fprintf(w, "complete -c knee -n __fish_use_subcommand -a %s -d '%s'\n", s.name, shortUsage(s.summary))
	}
	for _, s := range specs {
		cond := fmt.Sprintf("'__fish_seen_subcommand_from %s'", s.name)
		for _, f := range s.flags {
			line := fmt.Sprintf("complete -c knee -n %s -l %s -d '%s'", cond, f.name, shortUsage(f.usage))
			switch {
			case len(f.values) > 0:
				line += fmt.Sprintf(" -x -a '%s'", strings.Join(f.values, " "))
			case f.takesValue:
				line += " -r -F"
			}
			fmt.Fprintln(w, line)
		}
		switch s.name {
		case "completion":
			fmt.Fprintf(w, "complete -c knee -n %s -a 'bash zsh fish'\n", cond)
		case "sim":
			fmt.Fprintf(w, "complete -c knee -n %s -a sweep -d 'simulate a sweep'\n", cond)
		default:
			fmt.Fprintf(w, "complete -c knee -n %s -F\n", cond)
		}
	}
}
