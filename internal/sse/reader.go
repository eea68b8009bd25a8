// Package sse reads and writes Server-Sent Events (the text/event-stream
// format of the WHATWG HTML standard, §9.2) as LLM servers stream them.
//
// Reading order: Reader (this file) splits a byte stream into events with
// few allocations and tells, for every event, which underlying Read call
// delivered its end, so a caller that timestamps each Read can give events
// parsed from one read the same arrival time. Writer (writer.go) is the
// small server side used by knee's simulated servers.
//
// The package imports only the standard library.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// DefaultBufferSize is the initial read buffer. One LLM token chunk is a few
// hundred bytes, so one read usually holds whole events.
const DefaultBufferSize = 4 << 10

// MaxLineSize bounds one line; a longer line is an error, not an unbounded
// allocation driven by a misbehaving server.
const MaxLineSize = 8 << 20

// ErrLineTooLong is returned when a line exceeds MaxLineSize.
var ErrLineTooLong = errors.New("sse: line longer than 8 MiB")

// MaxEventSize bounds the data of one event: a server that sends data
// lines and never the blank line that ends an event would otherwise grow
// it without limit.
const MaxEventSize = 8 << 20

// ErrEventTooLarge is returned when an event's data exceeds MaxEventSize
// before its end.
var ErrEventTooLarge = errors.New("sse: event data over 8 MiB without a blank line to end it")

// Event is one dispatched event. Data and Type alias the Reader's buffers
// and are valid only until the next call to Next.
type Event struct {
	// Type is the value of the last "event:" field, empty when absent
	// (the standard's default type "message").
	Type []byte
	// Data is the value of the event's "data:" lines joined by "\n".
	Data []byte
	// ID is the last "id:" value seen, empty when none.
	ID []byte
	// Read is the 1-based sequence number of the underlying Read call that
	// delivered the blank line ending this event. Two events with the same
	// Read arrived in the same read and share its timestamp.
	Read uint64
	// Comments is the number of comment lines (":" keep-alives) seen since
	// the previous event.
	Comments int
}

// Reader splits an event stream into events.
type Reader struct {
	src io.Reader
	// OnRead, when set, is called right after every underlying Read returns
	// and before any of its bytes are parsed: the place to take a
	// timestamp. n and err are what Read returned.
	OnRead func(n int, err error)

	buf      []byte
	r, w     int  // unparsed bytes are buf[r:w]
	skipLF   bool // the previous line ended in CR; a following LF belongs to it
	err      error
	reads    uint64
	data     []byte
	hasData  bool
	typ      []byte
	id       []byte
	comments int

	// Lines counts complete lines parsed; UnknownLines those whose field
	// name is not one of data, event, id, retry (nor a comment). A body of
	// only unknown lines is not an event stream (an HTML error page, say).
	Lines, UnknownLines int
	// FirstUnknown is a copy of the first such line (at most 256 bytes),
	// for an error message that shows what the server sent instead.
	FirstUnknown []byte
}

// NewReader returns a Reader on src with an initial buffer of size bytes
// (DefaultBufferSize when size <= 0).
func NewReader(src io.Reader, size int) *Reader {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Reader{src: src, buf: make([]byte, size)}
}

// Reset makes r read from src, keeping its buffers.
func (r *Reader) Reset(src io.Reader) {
	onRead := r.OnRead
	buf, data, typ, id := r.buf, r.data[:0], r.typ[:0], r.id[:0]
	*r = Reader{src: src, buf: buf, data: data, typ: typ, id: id, OnRead: onRead}
}

// Reads returns how many underlying Read calls have been made.
func (r *Reader) Reads() uint64 { return r.reads }

// Buffered returns the bytes read but not yet parsed (the tail of an
// incomplete event at end of stream, for example).
func (r *Reader) Buffered() []byte { return r.buf[r.r:r.w] }

// Next returns the next event. At the end of the stream it returns io.EOF
// (an incomplete event at the end is discarded, as the standard says), or
// the error the underlying reader returned.
func (r *Reader) Next() (Event, error) {
	for {
		line, ok := r.line()
		if !ok {
			if r.err != nil {
				return Event{}, r.err
			}
			r.err = r.fill()
			continue
		}
		r.Lines++
		if len(line) == 0 {
			if !r.hasData {
				// Dispatch nothing; the type resets (WHATWG dispatch step 2).
				r.typ = r.typ[:0]
				continue
			}
			ev := Event{Type: r.typ, Data: r.data, ID: r.id, Read: r.reads, Comments: r.comments}
			if n := len(ev.Data); n > 0 && ev.Data[n-1] == '\n' {
				ev.Data = ev.Data[:n-1]
			}
			r.data, r.hasData, r.typ, r.comments = r.data[:0], false, r.typ[:0], 0
			return ev, nil
		}
		if len(r.data)+len(line) > MaxEventSize {
			r.err = ErrEventTooLarge
			return Event{}, r.err
		}
		r.field(line)
	}
}

// NextLine returns the next non-blank line, for line-delimited streams
// that are not event streams (NDJSON, as Ollama's native API sends), and
// the sequence number of the Read that delivered its end. A last line
// without a terminator is returned at the end of the stream; then io.EOF
// or the underlying reader's error. The line aliases the Reader's buffer
// until the next call.
func (r *Reader) NextLine() ([]byte, uint64, error) {
	for {
		line, ok := r.line()
		if !ok {
			if r.err != nil {
				if r.r < r.w {
					line = r.buf[r.r:r.w]
					r.r = r.w
					r.Lines++
					if len(bytes.TrimSpace(line)) > 0 {
						return line, r.reads, nil
					}
				}
				return nil, r.reads, r.err
			}
			r.err = r.fill()
			continue
		}
		r.Lines++
		if len(bytes.TrimSpace(line)) > 0 {
			return line, r.reads, nil
		}
	}
}

// line returns the next complete line without its terminator, or false
// when the buffer holds no complete line.
func (r *Reader) line() ([]byte, bool) {
	if r.skipLF && r.r < r.w {
		if r.buf[r.r] == '\n' {
			r.r++
		}
		r.skipLF = false
	}
	b := r.buf[r.r:r.w]
	lf := bytes.IndexByte(b, '\n')
	seg := b
	if lf >= 0 {
		seg = b[:lf]
	}
	if cr := bytes.IndexByte(seg, '\r'); cr >= 0 {
		if cr+1 < len(b) {
			if b[cr+1] == '\n' {
				r.r += cr + 2
			} else {
				r.r += cr + 1
			}
			return b[:cr], true
		}
		// CR is the last buffered byte: the line ends here, and an LF
		// that arrives next is part of its terminator.
		r.r += cr + 1
		r.skipLF = true
		return b[:cr], true
	}
	if lf < 0 {
		return nil, false
	}
	r.r += lf + 1
	return b[:lf], true
}

// fill reads more bytes, compacting or growing the buffer first.
func (r *Reader) fill() error {
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, n
	}
	if r.w == len(r.buf) {
		if len(r.buf) >= MaxLineSize {
			return ErrLineTooLong
		}
		nb := make([]byte, 2*len(r.buf))
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	n, err := r.src.Read(r.buf[r.w:])
	r.reads++
	if r.OnRead != nil {
		r.OnRead(n, err)
	}
	r.w += n
	if err == nil && n == 0 {
		return nil
	}
	return err
}

var (
	fieldData  = []byte("data")
	fieldEvent = []byte("event")
	fieldID    = []byte("id")
	fieldRetry = []byte("retry")
)

// field applies one non-empty line to the pending event.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		r.comments++
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch {
	case bytes.Equal(name, fieldData):
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case bytes.Equal(name, fieldEvent):
		r.typ = append(r.typ[:0], value...)
	case bytes.Equal(name, fieldID):
		if bytes.IndexByte(value, 0) < 0 {
			r.id = append(r.id[:0], value...)
		}
	case bytes.Equal(name, fieldRetry):
		// Reconnection delay: meaningless for a one-shot POST stream.
	default:
		if r.UnknownLines == 0 {
			r.FirstUnknown = append([]byte(nil), line[:min(len(line), 256)]...)
		}
		r.UnknownLines++
	}
}
