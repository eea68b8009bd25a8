package cli

import (
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/sweep"
)

// sweepStore keeps a sweep in the run database (runlife.SweepStore).
type sweepStore = runlife.SweepStore

// beginSweepStore starts the stored run; meta's load and configuration are
// replaced when the sweep finishes (the steps are known only then).
func beginSweepStore(env *Env, s *storeFlags, meta runMeta) (*sweepStore, error) {
	sr, err := s.begin(env, meta)
	if err != nil {
		return nil, err
	}
	return runlife.NewSweepStore(sr), nil
}

// storeSweep stores a finished sweep without per-request records (knee sim
// sweep, whose records the simulator reproduces exactly from the stored
// configuration and seed).
func storeSweep(env *Env, s *storeFlags, meta runMeta, res *sweep.Result, status string) (string, error) {
	ss, err := beginSweepStore(env, s, meta)
	if err != nil {
		return "", err
	}
	return ss.Finish(meta, res, status)
}
