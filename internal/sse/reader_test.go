package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// got is an event copied out of the Reader's buffers.
type got struct {
	Type, Data, ID string
	Read           uint64
	Comments       int
}

func (g got) String() string {
	return fmt.Sprintf("{type=%q data=%q id=%q read=%d comments=%d}", g.Type, g.Data, g.ID, g.Read, g.Comments)
}

func readAll(t testing.TB, r *Reader) ([]got, error) {
	var out []got
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, got{string(ev.Type), string(ev.Data), string(ev.ID), ev.Read, ev.Comments})
	}
}

// chunkReader returns its chunks one per Read call.
type chunkReader struct {
	chunks [][]byte
	err    error // returned after the last chunk; io.EOF when nil
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func chunks(parts ...string) *chunkReader {
	c := &chunkReader{}
	for _, p := range parts {
		c.chunks = append(c.chunks, []byte(p))
	}
	return c
}

func TestReaderTable(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		want  []got
	}{
		{"one event LF", []string{"data: hello\n\n"}, []got{{Data: "hello", Read: 1}}},
		{"CRLF", []string{"data: a\r\n\r\n"}, []got{{Data: "a", Read: 1}}},
		{"lone CR", []string{"data: a\r\rdata: b\r\r"}, []got{{Data: "a", Read: 1}, {Data: "b", Read: 1}}},
		{"CRLF split across reads", []string{"data: a\r", "\n\r", "\n"}, []got{{Data: "a", Read: 2}}},
		{"no space after colon", []string{"data:x\n\n"}, []got{{Data: "x", Read: 1}}},
		{"only one space stripped", []string{"data:  x\n\n"}, []got{{Data: " x", Read: 1}}},
		{"multi-line data", []string{"data: a\ndata: b\n\n"}, []got{{Data: "a\nb", Read: 1}}},
		{"empty data line dispatches empty data", []string{"data:\n\n"}, []got{{Data: "", Read: 1}}},
		{"bare field name data", []string{"data\n\n"}, []got{{Data: "", Read: 1}}},
		{"comments counted, not dispatched", []string{": keep-alive\n\n: ping\ndata: x\n\n"}, []got{{Data: "x", Read: 1, Comments: 2}}},
		{"event type", []string{"event: error\ndata: {}\n\n"}, []got{{Type: "error", Data: "{}", Read: 1}}},
		{"type resets without data", []string{"event: x\n\ndata: y\n\n"}, []got{{Data: "y", Read: 1}}},
		{"id persists", []string{"id: 7\ndata: a\n\ndata: b\n\n"}, []got{{Data: "a", ID: "7", Read: 1}, {Data: "b", ID: "7", Read: 1}}},
		{"unknown fields ignored", []string{"foo: bar\nretry: 10\ndata: a\n\n"}, []got{{Data: "a", Read: 1}}},
		{"event per read", []string{"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"}, []got{{Data: "1", Read: 1}, {Data: "2", Read: 2}, {Data: "3", Read: 3}}},
		{"two events one read", []string{"data: 1\n\ndata: 2\n\n", "data: 3\n\n"}, []got{{Data: "1", Read: 1}, {Data: "2", Read: 1}, {Data: "3", Read: 2}}},
		{"event split byte by byte", strings.Split("data: ab\n\n", ""), []got{{Data: "ab", Read: 10}}},
		{"incomplete event at EOF discarded", []string{"data: a\n\ndata: b\n"}, []got{{Data: "a", Read: 1}}},
		{"no trailing newline discarded", []string{"data: a"}, nil},
		{"DONE", []string{"data: {\"x\":1}\n\ndata: [DONE]\n\n"}, []got{{Data: `{"x":1}`, Read: 1}, {Data: "[DONE]", Read: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(chunks(tc.parts...), 0)
			evs, err := readAll(t, r)
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if fmt.Sprint(evs) != fmt.Sprint(tc.want) {
				t.Errorf("events\n got %v\nwant %v", evs, tc.want)
			}
		})
	}
}

func TestReaderHTMLCountsUnknownLines(t *testing.T) {
	r := NewReader(strings.NewReader("<html>\n<body>Bad Gateway</body>\n</html>\n"), 0)
	evs, err := readAll(t, r)
	if err != io.EOF || len(evs) != 0 {
		t.Fatalf("events %v err %v", evs, err)
	}
	if r.UnknownLines != 3 || r.Lines != 3 || string(r.FirstUnknown) != "<html>" {
		t.Errorf("Lines=%d UnknownLines=%d, want 3 and 3", r.Lines, r.UnknownLines)
	}
}

func TestReaderReturnsSourceError(t *testing.T) {
	boom := errors.New("connection reset")
	c := chunks("data: a\n\ndata: b")
	c.err = boom
	evs, err := readAll(t, NewReader(c, 0))
	if !errors.Is(err, boom) || len(evs) != 1 {
		t.Fatalf("events %v err %v, want 1 event then %v", evs, err, boom)
	}
}

func TestReaderErrorWithBytes(t *testing.T) {
	// A Read may return bytes and an error together; the bytes count.
	r := NewReader(io.MultiReader(&dataAndEOF{b: []byte("data: a\n\ndata: partial")}), 0)
	evs, err := readAll(t, r)
	if err != io.EOF || len(evs) != 1 || evs[0].Data != "a" {
		t.Fatalf("events %v err %v", evs, err)
	}
}

type dataAndEOF struct{ b []byte }

func (d *dataAndEOF) Read(p []byte) (int, error) {
	n := copy(p, d.b)
	d.b = d.b[n:]
	return n, io.EOF
}

func TestReaderGrowsForLongLines(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	evs, err := readAll(t, NewReader(strings.NewReader("data: "+long+"\n\n"), 64))
	if err != io.EOF || len(evs) != 1 || evs[0].Data != long {
		t.Fatalf("got %d events err %v", len(evs), err)
	}
}

func TestReaderLineTooLong(t *testing.T) {
	src := io.MultiReader(strings.NewReader("data: "), io.LimitReader(infinite{}, MaxLineSize+10))
	_, err := readAll(t, NewReader(src, 0))
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

type infinite struct{}

func (infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestOnReadCalledBeforeParsing(t *testing.T) {
	r := NewReader(chunks("data: 1\n\n", "data: 2\n\n"), 0)
	var reads []int
	r.OnRead = func(n int, err error) { reads = append(reads, n) }
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "1" || len(reads) != 1 {
		t.Fatalf("ev %q err %v reads %v", ev.Data, err, reads)
	}
	ev, _ = r.Next()
	if string(ev.Data) != "2" || len(reads) != 2 || ev.Read != 2 {
		t.Fatalf("ev %q read %d reads %v", ev.Data, ev.Read, reads)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	payloads := []string{`{"a":1}`, "two\nlines", " leading space", "", "[DONE]"}
	for _, p := range payloads {
		if err := w.Data([]byte(p)); err != nil {
			t.Fatal(err)
		}
		if err := w.Comment("keep-alive"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Event("error", []byte("oops")); err != nil {
		t.Fatal(err)
	}
	evs, err := readAll(t, NewReader(&b, 0))
	if err != io.EOF || len(evs) != len(payloads)+1 {
		t.Fatalf("events %v err %v", evs, err)
	}
	for i, p := range payloads {
		if evs[i].Data != p {
			t.Errorf("event %d data %q, want %q", i, evs[i].Data, p)
		}
	}
	if last := evs[len(evs)-1]; last.Type != "error" || last.Data != "oops" || last.Comments != 1 {
		t.Errorf("last event %v", last)
	}
}

func TestReaderAllocs(t *testing.T) {
	stream := []byte(strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", 64))
	br := bytes.NewReader(stream)
	r := NewReader(br, 0)
	allocs := testing.AllocsPerRun(50, func() {
		br.Reset(stream)
		r.Reset(br)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	})
	if allocs > 0 {
		t.Errorf("%.1f allocations per 64-event stream, want 0 after warm-up", allocs)
	}
}

func BenchmarkReader(b *testing.B) {
	ev := []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},\"finish_reason\":null}]}\n\n")
	stream := bytes.Repeat(ev, 256)
	br := bytes.NewReader(stream)
	r := NewReader(br, 0)
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n == 256 {
			br.Reset(stream)
			r.Reset(br)
			n = 0
		}
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// repeatLines reads as an endless run of one line: data lines that never
// get the blank line ending their event.
type repeatLines struct {
	line []byte
	off  int
}

func (r *repeatLines) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

func TestReaderEventWithoutEndIsBounded(t *testing.T) {
	// 4× the limit, then the end: without the limit the event is read
	// whole and dropped at EOF, unbounded had the stream gone on.
	src := io.LimitReader(&repeatLines{line: []byte("data: " + strings.Repeat("y", 1000) + "\n")}, 4*MaxEventSize)
	rd := NewReader(src, 0)
	_, err := rd.Next()
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	if n := cap(rd.data); n > 2*MaxEventSize {
		t.Errorf("event buffer grew to %d bytes, want at most %d", n, 2*MaxEventSize)
	}
	if _, err := rd.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("after the limit: err = %v, want ErrEventTooLarge again", err)
	}
}
