//go:build js

package workload

import "fmt"

// builtinRanks: the WebAssembly build (knee ui --export's simulator) leaves
// out the rank files, ~7 MB, that its pages never use: they simulate token
// counts, not text.
func builtinRanks(name string) (map[string]int, error) {
	return nil, fmt.Errorf("built-in encoding %s is not in the WebAssembly build of knee; use the knee binary", name)
}
