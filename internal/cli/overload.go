package cli

import (
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/stats"
)

// overloadWarning says when an open loop's queue grew without bound.
var overloadWarning = stats.OverloadWarning

// openFileLimit bounds the connections a load can hold open.
var openFileLimit = loadgen.OpenFileLimit
