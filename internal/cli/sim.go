package cli

import (
	"context"
	"errors"
)

// runSim is not built yet.
func runSim(_ context.Context, _ *Env, _ []string) error {
	return errors.New("sim: not implemented yet")
}
