package cli

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/store"
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
	// storeOptions open the database a run is stored in (tests shorten
	// its busy timeout).
	storeOptions store.Options
	// dashboard is Stderr without the control-character escaping: for the
	// live terminal dashboard alone, whose own cursor moves must reach the
	// terminal (it prints numbers and error kinds, nothing a server or a
	// file wrote). Nil until escapeOutput.
	dashboard io.Writer
}

// lockedWriter takes one write at a time: a subcommand writes its stderr
// from several goroutines (the progress display, a shard's outage
// messages), and a bytes.Buffer or a pipe must not see two at once.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// escapeOutput makes every command's output escape control characters
// (redact.ControlWriter: newlines and tabs kept) before a terminal, a pipe
// or a file sees them, whatever a printer forgot to escape of a server's,
// a file's or a flag's text; and makes Stderr take one write at a time.
// Once per Env.
func (env *Env) escapeOutput() {
	if env.dashboard != nil {
		return
	}
	if env.Stdout != nil {
		env.Stdout = redact.ControlWriter(env.Stdout)
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	mu := &sync.Mutex{}
	env.dashboard = &lockedWriter{mu: mu, w: env.Stderr}
	env.Stderr = &lockedWriter{mu: mu, w: redact.ControlWriter(env.Stderr)}
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

// dashboardOut is where the live terminal dashboard writes: Stderr
// unescaped once escapeOutput ran, else Stderr.
func (env *Env) dashboardOut() io.Writer {
	if env.dashboard != nil {
		return env.dashboard
	}
	return env.Stderr
}
