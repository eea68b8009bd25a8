package ingest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/workload"
)

// MaxFileBytes bounds what is read into memory of a file in another tool's
// format (a single JSON document, read whole). Parsing takes about 9 times
// the file's size (a 72 MB vLLM detailed result peaked at 620–680 MB in
// knee diagnose, sweep --from and import): at 2 GiB the runtime ran out of
// memory, so a larger file is refused, from its size, before it is read.
// knee's own records.jsonl streams and has no such bound in knee import.
const MaxFileBytes = 96 << 20

// wholeWant is what ReadWhole's refusal says a file should be, and why.
const wholeWant = "a result file of another tool, which knee parses whole as one JSON document " +
	"(about 9 times its size in memory): split it, or import the runs one file each"

// maxQuoted bounds how much of a file a message quotes: enough to
// recognise it, never a whole line of a huge or binary file.
const maxQuoted = 200

// quoteCapped quotes at most maxQuoted bytes of b for a message.
func quoteCapped(b []byte) string {
	if len(b) <= maxQuoted {
		return strconv.Quote(string(b))
	}
	cut := b[:maxQuoted]
	for len(cut) > 0 && !utf8.Valid(cut) && len(b)-len(cut) < 4 {
		cut = cut[:len(cut)-1]
	}
	return strconv.Quote(string(cut)) + fmt.Sprintf("… (%d bytes in all)", len(b))
}

// Input is an input file opened for parsing, checked first: not a folder,
// and text rather than binary.
type Input struct {
	io.Reader
	Size int64 // -1 for stdin
	file *os.File
}

// Close closes the file (not stdin).
func (t *Input) Close() error {
	if t.file != nil {
		return t.file.Close()
	}
	return nil
}

// OpenText opens path ("-": stdin) for a parser. want says what the file
// should be, for messages. A folder, a missing file and a binary file (NUL
// bytes or a non-text type in its first bytes) are bad input named before
// anything is parsed; reads stop when ctx ends.
func OpenText(ctx context.Context, stdin io.Reader, path, want string) (*Input, error) {
	in := &Input{Size: -1}
	rd := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, badinput.Errorf("%v (want %s)", err, want)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, badinput.Errorf("%v", err)
		}
		if fi.IsDir() {
			f.Close()
			return nil, badinput.Errorf("%s is a directory: want %s", path, want)
		}
		in.file, in.Size, rd = f, fi.Size(), f
	}
	br := bufio.NewReaderSize(workload.ContextReader(ctx, rd), 64<<10)
	head, _ := br.Peek(8 << 10)
	if kind := BinaryKind(head); kind != "" {
		in.Close()
		return nil, badinput.Errorf("%s is a binary file (%s; it starts with %s), not text: want %s", path, kind, quoteCapped(head[:min(len(head), 16)]), want)
	}
	in.Reader = br
	return in, nil
}

// BinaryKind names what head looks like when it is not text ("" for text).
func BinaryKind(head []byte) string {
	if len(head) == 0 {
		return ""
	}
	ct := http.DetectContentType(head)
	switch {
	case strings.IndexByte(string(head), 0) >= 0:
		return "it holds NUL bytes; " + ct
	case !strings.HasPrefix(ct, "text/"):
		return ct
	}
	return ""
}

// ReadWhole reads a whole result file of another tool (their formats are
// single JSON documents), refusing one larger than MaxFileBytes before
// reading it when its size is known (size < 0: not known).
func ReadWhole(path string, size int64, src io.Reader) ([]byte, error) {
	return badinput.ReadAll(path, size, src, MaxFileBytes, wholeWant)
}
