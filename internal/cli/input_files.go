package cli

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

	"github.com/knee-dev/knee/internal/workload"
)

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

// textInput is an input file opened for parsing, checked first: not a
// folder, and text rather than binary.
type textInput struct {
	io.Reader
	size int64 // -1 for stdin
	file *os.File
}

func (t *textInput) Close() error {
	if t.file != nil {
		return t.file.Close()
	}
	return nil
}

// openText opens path ("-": stdin) for a parser. want says what the file
// should be, for messages. A folder, a missing file and a binary file
// (NUL bytes or a non-text type in its first bytes) are usage errors named
// before anything is parsed; reads stop when ctx ends.
func openText(ctx context.Context, env *Env, path, want string) (*textInput, error) {
	in := &textInput{size: -1}
	var rd io.Reader = env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, Usagef("%v (want %s)", err, want)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, Usagef("%v", err)
		}
		if fi.IsDir() {
			f.Close()
			return nil, Usagef("%s is a directory: want %s", path, want)
		}
		in.file, in.size, rd = f, fi.Size(), f
	}
	br := bufio.NewReaderSize(workload.ContextReader(ctx, rd), 64<<10)
	head, _ := br.Peek(8 << 10)
	if kind := binaryKind(head); kind != "" {
		in.Close()
		return nil, Usagef("%s is a binary file (%s; it starts with %s), not text: want %s", path, kind, quoteCapped(head[:min(len(head), 16)]), want)
	}
	in.Reader = br
	return in, nil
}

// binaryKind names what head looks like when it is not text ("" for text).
func binaryKind(head []byte) string {
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
