package cli

import (
	"context"
	"errors"
)

// runCompare is not built yet.
func runCompare(_ context.Context, _ *Env, _ []string) error {
	return errors.New("compare: not implemented yet")
}
