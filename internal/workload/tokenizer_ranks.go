//go:build !js

package workload

import tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

// builtinRanks reads a built-in encoding's ranks from the rank files
// embedded in the binary. The offline loader looks only at the file name;
// tiktoken-go's default loader would download them, so it is never used.
func builtinRanks(name string) (map[string]int, error) {
	return tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
}
