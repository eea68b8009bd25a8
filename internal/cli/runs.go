package cli

import (
	"context"
	"errors"
)

// runRuns is not built yet.
func runRuns(_ context.Context, _ *Env, _ []string) error {
	return errors.New("runs: not implemented yet")
}
