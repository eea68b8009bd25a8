package cli

// The run database as the commands reach it: --db declared once, and
// internal/runs opening it with this process's environment.

import (
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/pflag"
)

// dbFlag registers --db on fs.
func dbFlag(fs *pflag.FlagSet) *string {
	return fs.String("db", "", "run database: an SQLite file or a postgres:// URL (default $KNEE_DB, else $XDG_DATA_HOME/knee/knee.db)")
}

// openDB opens the database named by --db, $KNEE_DB or the default path.
func openDB(env *Env, flagPath string) (*store.Store, error) { return runs.Open(flagPath, env.Getenv) }

// openDBRead opens it read-only, creating nothing (runs, report, compare, records).
func openDBRead(env *Env, flagPath string) (*store.Store, error) {
	return runs.OpenRead(flagPath, env.Getenv)
}

var (
	dbErr      = runs.DBErr
	resolveRun = runs.Resolve
	pairsJSON  = runs.PairsJSON
)
