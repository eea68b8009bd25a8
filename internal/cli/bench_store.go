package cli

import (
	"fmt"

	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/pflag"
)

// storeFlags choose the run database for commands that store runs.
type storeFlags struct {
	db      string
	noStore bool
	// sharding, when set and active, makes begin join a sharded run
	// (bench --shards) instead of starting a run of its own.
	sharding *shardFlags
}

func (s *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.db, "db", "", "run database: an SQLite file or a postgres:// URL (default $KNEE_DB, else $XDG_DATA_HOME/knee/knee.db)")
	fs.BoolVar(&s.noStore, "no-store", false, "do not store this run in the database")
}

// What a stored run is (runlife's).
type (
	runMeta   = runlife.Meta
	storedRun = runlife.Stored
	runWriter = runlife.RunWriter
)

// beginRunWriter starts a stored run; tests replace it to fail as a full
// disk does.
var beginRunWriter = func(st *store.Store, meta store.RunMeta) (runWriter, error) {
	return st.BeginRun(meta)
}

// begin opens the database and starts a run (runlife.Begin); nil with
// --no-store.
func (s *storeFlags) begin(env *Env, meta runMeta) (*storedRun, error) {
	if s.noStore {
		return nil, nil
	}
	path := s.db
	if path == "" {
		path = store.DefaultPath(env.Getenv)
	}
	var shard *runlife.Shard
	if s.sharding != nil {
		shard = &s.sharding.Shard
	}
	return runlife.Begin(path, env.storeOptions, meta, Version, shard, func(msg string) { fmt.Fprintln(env.Stderr, "knee: "+msg) }, beginRunWriter)
}
