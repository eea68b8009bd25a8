package cli

import (
	"context"
	"errors"
)

// runServe is not built yet.
func runServe(_ context.Context, _ *Env, _ []string) error {
	return errors.New("serve: not implemented yet")
}
