package badinput

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// ReadFile reads the user-named file path whole, at most limit bytes, so
// that whatever it names (a 10 GB file, /dev/zero, a pipe) takes bounded
// memory and time. want says what the file should be, for the messages
// refusing a larger one or a directory. Errors opening or reading it are
// returned as they are, for the caller to word.
func ReadFile(path string, limit int64, want string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, Errorf("%s is a directory: want %s", path, want)
	} else if err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return ReadAll(path, size, f, limit, want)
}

// ReadAll reads src whole, at most limit bytes. A src whose size is known
// (size >= 0) and over limit is refused before any of it is read; one of
// unknown size is cut off at limit+1 bytes and then refused. name says what
// src is, for messages.
func ReadAll(name string, size int64, src io.Reader, limit int64, want string) ([]byte, error) {
	if size > limit {
		return nil, Errorf("%s is larger than %s (%d bytes): want %s", name, sizeText(limit), size, want)
	}
	// A known size is the buffer's size (plus room to see EOF), so a file
	// near the limit costs its size, not the doublings of a growing slice.
	buf := bytes.NewBuffer(make([]byte, 0, max(size, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(src, limit+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	data := buf.Bytes()
	if int64(len(data)) > limit {
		return nil, Errorf("%s is larger than %s: want %s", name, sizeText(limit), want)
	}
	return data, nil
}

// sizeText writes a limit the way people set them: 2 GiB, 64 MiB.
func sizeText(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
