package simserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A request's receipt time is when its first bytes arrived, never an
// earlier request's: a body that comes in its own segment (read after the
// handler took the arrival stamp) must not stamp the next request on the
// connection, which would start its knee_timing (the TTFT truth) early by
// the gap between the two.
func TestReceiptNotStampedByEarlierBody(t *testing.T) {
	for _, nh := range []bool{false, true} {
		url, _ := startTest(t, func(c *Config) { c.NoHijack = nh })
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		body := `{"prompt":"one two three","max_tokens":3,"stream":true}`
		head := fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		const gap = 300 * time.Millisecond
		for i := 0; i < 2; i++ {
			if i == 0 {
				// Headers first, the body in a later segment.
				conn.Write([]byte(head))
				time.Sleep(20 * time.Millisecond)
				conn.Write([]byte(body))
			} else {
				time.Sleep(gap)
				conn.Write([]byte(head + body))
			}
			tm := readStreamTiming(t, br)
			if first := tm.TokenTimesMS[0]; i == 1 && first >= float64(gap/time.Millisecond) {
				t.Errorf("no-hijack=%v: second request's first token %.1f ms after its receipt: receipt stamped by the first request's body, %v earlier", nh, first, gap)
			}
		}
	}
}

// readStreamTiming reads one chunked SSE response and returns its knee_timing.
func readStreamTiming(t *testing.T, br *bufio.Reader) *kneeTiming {
	t.Helper()
	var tm *kneeTiming
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok && strings.Contains(d, "knee_timing") {
			var c chunk
			if err := json.Unmarshal([]byte(d), &c); err != nil {
				t.Fatalf("final chunk %q: %v", d, err)
			}
			tm = c.Timing
		}
		if line == "data: [DONE]\n" {
			break
		}
	}
	// The chunked stream's end: "\r\n0\r\n\r\n" after the last chunk.
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the end of the response: %v", err)
		}
		if line == "0\r\n" {
			br.ReadString('\n')
			break
		}
	}
	if tm == nil || len(tm.TokenTimesMS) == 0 {
		t.Fatal("no knee_timing in the response")
	}
	return tm
}
