package cli

import (
	"time"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/spf13/pflag"
)

// shardFlags declare one shard of a load split across processes
// (runlife.Shard).
type shardFlags struct{ runlife.Shard }

func (s *shardFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&s.Count, "shards", 1, "split the run's schedule across this many processes (each runs one shard; they meet in the --db database)")
	fs.IntVar(&s.Index, "shard", -1, "this process's shard index, 0 to --shards−1 (default: $"+cluster.IndexEnv+", as a Kubernetes Indexed Job sets it)")
	fs.StringVar(&s.RunName, "run-name", "", "the run's name, unique in the database, taken wherever a run id is (knee report NAME); with --shards, the name all shards share")
	fs.DurationVar(&s.Timeout, "shard-timeout", 5*time.Minute, "with --shards: how long to wait for every shard to register before failing")
	s.Lead = 2 * time.Second
}
