// Package runs reads the runs knee stored: opening the run database as a
// command that reads or writes it, resolving what a user typed as a run
// (12, last, last~1), loading a run as the report model, listing runs and
// exporting a run's records. The knee runs, report, compare, records and
// import commands are flags around it.
package runs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/store"
)

// Open opens the database at path, or at $KNEE_DB / the default path when
// path is "" (getenv reads the environment). A database that is damaged,
// not a knee database, or newer than this knee is bad input.
func Open(path string, getenv func(string) string) (*store.Store, error) {
	if path == "" {
		path = store.DefaultPath(getenv)
	}
	st, err := store.Open(path)
	if err != nil {
		if errors.Is(err, store.ErrNotDatabase) || errors.Is(err, store.ErrTooNew) {
			return nil, badinput.Errorf("%v", err)
		}
		return nil, fmt.Errorf("opening the run database %s: %w", store.Redact(path), err)
	}
	return st, nil
}

// OpenRead opens the database for a command that only reads: read-only, so
// it works on a read-only folder or file, and never creating anything. A
// missing file is bad input naming it.
func OpenRead(path string, getenv func(string) string) (*store.Store, error) {
	if path == "" {
		path = store.DefaultPath(getenv)
	}
	st, err := store.OpenReadOnly(path)
	if err != nil {
		if errors.Is(err, store.ErrNoDatabase) {
			return nil, badinput.Errorf("%w; pass --db FILE or set KNEE_DB to read another", err)
		}
		return nil, DBErr(err)
	}
	return st, nil
}

// DBErr makes a damaged or foreign database file bad input (exit 2): the
// store names the file.
func DBErr(err error) error {
	if errors.Is(err, store.ErrNotDatabase) || errors.Is(err, store.ErrTooNew) {
		return badinput.Wrap(err)
	}
	return err
}

// Resolve turns a user's run reference (12, last, last~1, or a run's
// --run-name) into an id; an
// unknown or malformed reference is bad input.
func Resolve(st *store.Store, ref string) (int64, error) {
	id, err := st.ResolveID(ref)
	if err != nil {
		return 0, badinput.Wrap(err)
	}
	return id, nil
}

// OpenRun opens the database read-only and finds run ref in it; the caller
// closes the store.
func OpenRun(path string, getenv func(string) string, ref string) (*store.Store, int64, error) {
	st, err := OpenRead(path, getenv)
	if err != nil {
		return nil, 0, err
	}
	id, err := Resolve(st, ref)
	if err != nil {
		st.Close()
		return nil, 0, err
	}
	return st, id, nil
}

// WantOne checks that command cmd got one run reference.
func WantOne(cmd string, args []string) error {
	if len(args) != 1 {
		return badinput.Errorf("want one run: knee %s RUN (an id from `knee runs`, \"last\" or \"last~N\"), got %d arguments", cmd, len(args))
	}
	return nil
}

// CheckName refuses a --run-name that could not name a run wherever a run
// is taken: empty, a number (an id), "last", "latest" or "last~N" (what
// Resolve reads first), or text with control characters or spaces at its
// ends.
func CheckName(name string) error {
	bad := func(why string) error {
		return badinput.Errorf("--run-name %q: %s; want a name such as nightly-2026-12-07 (letters, digits, '-', '_', '.')", name, why)
	}
	switch {
	case name == "":
		return bad("empty")
	case strings.TrimSpace(name) != name:
		return bad("spaces at its ends")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return bad("control characters")
	case name == "last" || name == "latest" || strings.HasPrefix(name, "last~"):
		return bad("it reads as a run reference (last, last~N)")
	}
	if _, err := strconv.ParseInt(strings.TrimPrefix(name, "#"), 10, 64); err == nil {
		return bad("a number reads as a run id")
	}
	return nil
}
