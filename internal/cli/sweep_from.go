package cli

import (
	"context"

	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/sweep"
)

// sweepFrom analyses load points measured by any tool (sweep.AnalyzeFrom),
// each file read as knee import reads it.
func sweepFrom(ctx context.Context, env *Env, f *sweepFlags, args []string, set slo.Set) error {
	res, err := sweep.AnalyzeFrom(args, func(p string) ([]byte, error) { return readImport(ctx, env, p) }, f.Metric, set)
	if err != nil {
		return err
	}
	return f.emit(env, res)
}
