package cli

import (
	"context"
	"errors"
)

// runDiagnose is not built yet.
func runDiagnose(_ context.Context, _ *Env, _ []string) error {
	return errors.New("diagnose: not implemented yet")
}
