package badinput

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file within the limit reads whole; one over it is refused as bad input
// naming the file, the limit and what was wanted, whether its size is known
// (a sparse file far over the limit, never read) or not (an endless device).
func TestReadFileCapped(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte("0123456789"), 0o644)
	if b, err := ReadFile(small, 10, "a small file"); err != nil || string(b) != "0123456789" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	if _, err := ReadFile(small, 9, "a small file"); !Is(err) || err.Error() != small+" is larger than 9 bytes (10 bytes): want a small file" {
		t.Errorf("one byte over: %v", err)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 30); err != nil { // sparse: no disk used
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	if _, err := ReadFile(huge, 1<<20, "a small file"); !Is(err) || !strings.Contains(err.Error(), "larger than 1 MiB (10737418240 bytes): want a small file") {
		t.Errorf("10 GiB file: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero", 4<<10, "a small file"); !Is(err) || err.Error() != "/dev/zero is larger than 4 KiB: want a small file" {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 10, "x"); !errors.Is(err, fs.ErrNotExist) || Is(err) {
		t.Errorf("missing file: %v, want the open error as it is", err)
	}
	if _, err := ReadFile(dir, 10, "a small file"); !Is(err) || err.Error() != dir+" is a directory: want a small file" {
		t.Errorf("a directory: %v", err)
	}
}
