package cli

import "github.com/knee-dev/knee/internal/stats"

// overloadWarning says when an open loop's queue grew without bound.
var overloadWarning = stats.OverloadWarning
