package simserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Request bodies are bounded in size (maxBodyBytes each), in time
// (Config.BodyReadTimeout from the end of the headers) and together: the
// bodies being read at once hold at most maxBodyBytesInFlight bytes
// (reserved by Content-Length up front, counted as read for chunked
// bodies); a request over that budget gets 503 at once, so a flood of
// large or slow bodies cannot take the server's memory.
const maxBodyBytesInFlight = 256 << 20

// defaultBodyReadTimeout is Config.BodyReadTimeout's default.
const defaultBodyReadTimeout = 30 * time.Second

var errBodiesOverBudget = errors.New("request bodies in flight over the server's budget")

func bodiesBusy() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
		Message: fmt.Sprintf("the server is reading %d MiB of request bodies already; retry later", maxBodyBytesInFlight>>20)}
}

// admitBody sets the body's read deadline and reserves its bytes in the
// budget; release returns them and, when the body was read (read), clears
// the deadline: a kept-alive or hijacked connection must not inherit it.
// After a failed read the deadline stays, so net/http's drain of the
// unread body before the error response ends at it too.
func (s *Server) admitBody(w http.ResponseWriter, r *http.Request) (release func(read bool), aerr *apiError) {
	if r.ContentLength > maxBodyBytes {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("request body of %d bytes is over %d bytes", r.ContentLength, maxBodyBytes)}
	}
	reserved := max(r.ContentLength, 0)
	if s.bodyBytes.Add(reserved) > maxBodyBytesInFlight {
		s.bodyBytes.Add(-reserved)
		return nil, bodiesBusy()
	}
	timeout := s.cfg.BodyReadTimeout
	if timeout <= 0 {
		timeout = defaultBodyReadTimeout
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout)) // a writer without deadlines keeps ReadHeaderTimeout only
	var counted *budgetedBody
	if r.ContentLength < 0 && r.Body != nil {
		counted = &budgetedBody{ReadCloser: r.Body, used: &s.bodyBytes}
		r.Body = counted
	}
	return func(read bool) {
		s.bodyBytes.Add(-reserved)
		if counted != nil {
			s.bodyBytes.Add(-counted.taken)
			counted.taken = 0
		}
		if read {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}, nil
}

// budgetedBody counts a chunked body's bytes into the budget as they are
// read, failing the read once the budget is spent.
type budgetedBody struct {
	io.ReadCloser
	used  interface{ Add(int64) int64 }
	taken int64
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.taken += int64(n)
		if b.used.Add(int64(n)) > maxBodyBytesInFlight {
			return n, errBodiesOverBudget
		}
	}
	return n, err
}
