package cli

import (
	"context"
	"errors"
)

// runSelftest is not built yet.
func runSelftest(_ context.Context, _ *Env, _ []string) error {
	return errors.New("selftest: not implemented yet")
}
