//go:build js && wasm

// Command knee-wasm is knee ui's API compiled to WebAssembly, for the
// static copy that knee ui --export writes: the page calls kneeAPI(method,
// path, body) instead of fetch, and the same handlers that knee ui serves
// answer in the browser (simulator, sweep, lab, worked pair, Learn). The
// run database is not in it: the runs pages say they need knee ui.
//
// Built by go generate in internal/web (see export.go there).
package main

import (
	"net/http/httptest"
	"strings"
	"syscall/js"

	"github.com/knee-dev/knee/internal/web"
)

// host is the name requests carry inside the page; nothing resolves it,
// the handler only checks that it is one it accepts.
const host = "knee.static"

func main() {
	const token = "static"
	s, err := web.New(web.Config{Token: token})
	if err != nil {
		js.Global().Get("console").Call("error", "knee: "+err.Error())
		return
	}
	s.AllowHost(host)
	js.Global().Set("kneeAPI", js.FuncOf(func(_ js.Value, args []js.Value) any {
		method, path, body := args[0].String(), args[1].String(), args[2].String()
		// An optional fourth argument receives a streamed answer's text as
		// the handler flushes it (a sweep's steps as they finish); the
		// promise then resolves with the rest.
		var onChunk js.Value
		if len(args) > 3 && args[3].Type() == js.TypeFunction {
			onChunk = args[3]
		}
		return js.Global().Get("Promise").New(js.FuncOf(func(_ js.Value, p []js.Value) any {
			resolve := p[0]
			// A handler may block (a sweep runs its steps on goroutines):
			// the JavaScript callback must return first.
			go func() {
				req := httptest.NewRequest(method, "http://"+host+path, strings.NewReader(body))
				req.Header.Set(web.TokenHeader, token)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				rec := &chunkRecorder{ResponseRecorder: httptest.NewRecorder(), onChunk: onChunk}
				s.ServeHTTP(rec, req)
				resolve.Invoke(map[string]any{"status": rec.Code, "body": rec.Body.String()[rec.sent:]})
			}()
			return nil
		}))
	}))
	js.Global().Call("dispatchEvent", js.Global().Get("Event").New("knee-wasm-ready"))
	select {}
}

// chunkRecorder hands what the handler wrote so far to onChunk on each
// Flush (when onChunk is a function), so a streamed answer reaches the
// page while the handler still runs.
type chunkRecorder struct {
	*httptest.ResponseRecorder
	onChunk js.Value
	sent    int
}

func (c *chunkRecorder) Flush() {
	if c.onChunk.Type() != js.TypeFunction {
		return
	}
	b := c.Body.String()
	if len(b) > c.sent {
		c.onChunk.Invoke(c.Code, b[c.sent:])
		c.sent = len(b)
	}
}
