package cli

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"
)

// Version is knee's version, stamped into every stored run.
var Version = "0.1.0-dev"

// Env is what a subcommand may touch of the outside world.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads environment variables (injected for tests).
	Getenv func(string) string
	// IsTerminal reports whether Stdout is an interactive terminal.
	IsTerminal bool
	// helpWidth is the terminal's width for help text (0: not a terminal,
	// wrap at 80).
	helpWidth int
	// beforeLiveClose, when set (tests), is called with the address of
	// --metrics-addr's endpoint once the load has ended and before the
	// endpoint closes: the last moment its final counts can be scraped.
	beforeLiveClose func(addr string)
}

func newVersionCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "version")
	fs := cmd.Flags()
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %s (knee version takes none)", shown(fs.Arg(0)))
		}
		fmt.Fprintf(env.Stdout, "knee %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}
	return cmd
}
