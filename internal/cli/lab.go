package cli

import (
	"context"
	"errors"
)

// runLab is not built yet.
func runLab(_ context.Context, _ *Env, _ []string) error {
	return errors.New("lab: not implemented yet")
}
