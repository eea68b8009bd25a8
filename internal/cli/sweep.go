package cli

import (
	"context"
	"errors"
)

// runSweep is not built yet.
func runSweep(_ context.Context, _ *Env, _ []string) error {
	return errors.New("sweep: not implemented yet")
}
