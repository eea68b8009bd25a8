package junit

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/knee-dev/knee/internal/badinput"
)

// CheckFile refuses, before any work, a --junit file that cannot be
// written; its folder is made as --out makes its own. "" is no file.
func CheckFile(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badinput.Errorf("--junit %s: is a folder; want a file name", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return badinput.Errorf("--junit %s: cannot make its folder: %v", path, err)
	}
	return nil
}

// WriteFile writes the suites to path ("": nowhere); a file CI cannot read
// is a failed run, so every error is returned.
func WriteFile(path, name string, suites []Suite) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	err = Write(f, name, suites)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	return nil
}
