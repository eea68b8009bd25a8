package cli

import (
	"context"
	"errors"
)

// runReport is not built yet.
func runReport(_ context.Context, _ *Env, _ []string) error {
	return errors.New("report: not implemented yet")
}
