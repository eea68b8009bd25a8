package sse

import (
	"bytes"
	"io"
)

// Writer writes events to w, one Write call per event so that a flush
// after each event puts it on the wire whole. It is not safe for
// concurrent use.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, buf: make([]byte, 0, 512)} }

// Data writes one event whose data is p: "data: p\n\n". A p containing
// line breaks is written as several data lines, which a reader joins back
// with "\n" (a CR or CRLF inside p comes back as LF).
func (w *Writer) Data(p []byte) error {
	w.buf = AppendData(w.buf[:0], p)
	_, err := w.w.Write(w.buf)
	return err
}

// Event writes one event with an explicit type ("event: typ").
func (w *Writer) Event(typ string, p []byte) error {
	w.buf = append(w.buf[:0], "event: "...)
	w.buf = append(w.buf, typ...)
	w.buf = append(w.buf, '\n')
	w.buf = AppendData(w.buf, p)
	_, err := w.w.Write(w.buf)
	return err
}

// Comment writes a comment line (": text\n"), the usual keep-alive. It
// ends no event.
func (w *Writer) Comment(text string) error {
	w.buf = append(w.buf[:0], ": "...)
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// Flush flushes the underlying writer when it can (an http.ResponseWriter
// is an http.Flusher).
func (w *Writer) Flush() {
	if f, ok := w.w.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// WriteData writes one data event to w without a Writer; it allocates.
func WriteData(w io.Writer, p []byte) error {
	_, err := w.Write(AppendData(nil, p))
	return err
}

// AppendData appends the event "data: p\n\n" to dst, splitting p at line
// breaks into several data lines.
func AppendData(dst, p []byte) []byte {
	for {
		i := bytes.IndexAny(p, "\r\n")
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, p...)
			return append(dst, '\n', '\n')
		}
		dst = append(dst, p[:i]...)
		dst = append(dst, '\n')
		if p[i] == '\r' && i+1 < len(p) && p[i+1] == '\n' {
			i++
		}
		p = p[i+1:]
	}
}
