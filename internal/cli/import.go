package cli

import (
	"context"
	"errors"
)

// runImport is not built yet.
func runImport(_ context.Context, _ *Env, _ []string) error {
	return errors.New("import: not implemented yet")
}
