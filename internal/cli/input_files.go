package cli

import (
	"context"

	"github.com/knee-dev/knee/internal/ingest"
)

// Input files are checked before parsing by internal/ingest: not a folder,
// not binary, a whole other tool's file at most ingest.MaxFileBytes.
const maxImportBytes = ingest.MaxFileBytes

var binaryKind = ingest.BinaryKind

// openText opens path ("-": stdin) for a parser; want says what the file
// should be, for messages.
func openText(ctx context.Context, env *Env, path, want string) (*ingest.Input, error) {
	return ingest.OpenText(ctx, env.Stdin, path, want)
}
