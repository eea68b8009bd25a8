package sse

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// reference parses a whole stream the plain way the WHATWG standard reads,
// with no buffering concerns. ends[i] is the offset of the first byte of
// the terminator of the blank line that dispatched event i.
func reference(in []byte) (evs []got, ends []int) {
	var data, typ, id []byte
	hasData, comments := false, 0
	pos := 0
	for pos < len(in) {
		end := bytes.IndexAny(in[pos:], "\r\n")
		if end < 0 {
			break // incomplete line at EOF: discarded
		}
		line := in[pos : pos+end]
		term := pos + end
		next := term + 1
		if in[term] == '\r' && next < len(in) && in[next] == '\n' {
			next++
		}
		pos = next
		switch {
		case len(line) == 0:
			if hasData {
				d := data
				if len(d) > 0 && d[len(d)-1] == '\n' {
					d = d[:len(d)-1]
				}
				evs = append(evs, got{Type: string(typ), Data: string(d), ID: string(id), Comments: comments})
				ends = append(ends, term)
				comments = 0
			}
			data, typ, hasData = nil, nil, false
		case line[0] == ':':
			comments++
		default:
			name, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				name, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(name) {
			case "data":
				data = append(append(data, value...), '\n')
				hasData = true
			case "event":
				typ = append([]byte(nil), value...)
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					id = append([]byte(nil), value...)
				}
			}
		}
	}
	return evs, ends
}

// FuzzReader checks the buffered Reader against the reference parser for
// every input and every way of cutting it into reads, including which read
// each event is attributed to.
func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"), uint64(1), 8)
	f.Add([]byte(": keep-alive\r\n\r\nevent: error\r\ndata: a\r\ndata: b\r\n\r\n"), uint64(7), 3)
	f.Add([]byte("data: a\r\rdata: b\r\r\ndata\n\n"), uint64(3), 1)
	f.Add([]byte("<html><body>502 Bad Gateway</body></html>\n"), uint64(5), 16)
	f.Add([]byte("id: 1\nretry: 5\nfoo\ndata:x\n\ndata: partial"), uint64(9), 2)
	f.Fuzz(func(t *testing.T, in []byte, seed uint64, bufSize int) {
		wantEvs, wantEnds := reference(in)
		// Cut the input at pseudo-random points derived from seed.
		var parts [][]byte
		rest, x := in, seed|1
		for len(rest) > 0 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			n := 1 + int(x%17)
			if n > len(rest) {
				n = len(rest)
			}
			parts = append(parts, rest[:n])
			rest = rest[n:]
		}
		if bufSize < 1 || bufSize > 64 {
			bufSize = 1 + (bufSize&63+64)%64
		}
		rec := &recordingReader{src: &chunkReader{chunks: parts}}
		r := NewReader(rec, bufSize)
		var evs []got
		var err error
		for {
			var ev Event
			ev, err = r.Next()
			if err != nil {
				break
			}
			evs = append(evs, got{string(ev.Type), string(ev.Data), string(ev.ID), ev.Read, ev.Comments})
		}
		if err != io.EOF {
			t.Fatalf("err = %v, want io.EOF", err)
		}
		// Which read delivered each terminator byte.
		for i, end := range wantEnds {
			read := 0
			for read < len(rec.after) && rec.after[read] <= end {
				read++
			}
			wantEvs[i].Read = uint64(read + 1)
		}
		if r.Reads() != uint64(len(rec.after)) {
			t.Fatalf("Reads() = %d, source saw %d", r.Reads(), len(rec.after))
		}
		if fmt.Sprint(evs) != fmt.Sprint(wantEvs) {
			t.Fatalf("input %q parts %q\n got %v\nwant %v", in, parts, evs, wantEvs)
		}
	})
}

// recordingReader notes the stream offset reached after each Read.
type recordingReader struct {
	src   io.Reader
	off   int
	after []int
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	r.off += n
	r.after = append(r.after, r.off)
	return n, err
}
