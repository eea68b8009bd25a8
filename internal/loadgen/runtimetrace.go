package loadgen

import (
	"os"
	"runtime/trace"
	"sync"
)

// StartRuntimeTrace starts a Go runtime trace into path ("": none), in
// which the load logs each request's due time, send and writes (go tool
// trace PATH shows where client lag comes from). stop ends it and closes
// the file, and may be called more than once.
func StartRuntimeTrace(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			trace.Stop()
			f.Close()
		})
	}, nil
}
