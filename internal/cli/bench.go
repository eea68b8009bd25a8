package cli

import (
	"context"
	"errors"
)

// runBench is not built yet.
func runBench(_ context.Context, _ *Env, _ []string) error {
	return errors.New("bench: not implemented yet")
}
