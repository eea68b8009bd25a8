//go:build linux

package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knee-dev/knee/internal/sse"
)

// The whole-client CPU measurement runs the streaming server in a child
// process (this test binary re-executed with helperEnv set), so that
// getrusage(RUSAGE_SELF) in the parent counts the client alone: HTTP,
// syscalls, the Go scheduler and netpoller, SSE, decoding and records.
// The server stamps each write with CLOCK_MONOTONIC, which the client
// maps onto its own run clock, so the same run also measures TTFT/ITL
// error against the truth at that scale.
//
//	go test -run '^$' -bench ClientCPU -benchtime 1x -v ./internal/loadgen
const helperEnv = "KNEE_LOADGEN_STREAM_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		serveStreams()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// serveStreams is the child process: a minimal streaming server. Each
// request gets max_tokens content chunks, the first after gap and then one
// every gap (absolute schedule), each flushed on its own. GET /truth
// returns every request's write times. It exits when stdin closes.
func serveStreams() {
	if spec, ok := strings.CutPrefix(os.Getenv(helperEnv), "raw:"); ok {
		serveRaw(spec)
		return
	}
	gap, _ := time.ParseDuration(os.Getenv(helperEnv))
	var mu sync.Mutex
	truth := make(map[string][]int64)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /truth", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(truth)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		received := time.Now()
		var body struct {
			Messages  []struct{ Content string }
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		sw := sse.NewWriter(w)
		sw.Data([]byte(benchRole))
		fl.Flush()
		times := make([]int64, 0, body.MaxTokens)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		content := []byte(benchContent)
		for i := range body.MaxTokens {
			timer.Reset(time.Until(received.Add(time.Duration(i+1) * gap)))
			select {
			case <-timer.C:
			case <-r.Context().Done():
				return
			}
			times = append(times, monoNow())
			if sw.Data(content) != nil {
				return
			}
			fl.Flush()
		}
		sw.Data([]byte(benchFinish))
		sw.Data([]byte(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d}}`, body.MaxTokens)))
		sw.Data([]byte("[DONE]"))
		fl.Flush()
		mu.Lock()
		truth[body.Messages[0].Content] = times
		mu.Unlock()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	srv := &http.Server{Handler: mux}
	srv.Serve(ln)
}

// serveRaw is the child for the read floor: on every accepted TCP
// connection it writes one token-sized SSE event every gap, `tokens`
// times, then closes. No HTTP.
func serveRaw(spec string) {
	gapStr, tokStr, _ := strings.Cut(spec, ",")
	gap, _ := time.ParseDuration(gapStr)
	tokens, _ := strconv.Atoi(tokStr)
	event := sse.AppendData(nil, []byte(benchContent))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			start := time.Now()
			for i := range tokens {
				time.Sleep(time.Until(start.Add(time.Duration(i+1) * gap)))
				if _, err := c.Write(event); err != nil {
					return
				}
			}
		}()
	}
}

// startStreamServer starts the child server and returns its base URL.
func startStreamServer(tb testing.TB, gap time.Duration) string {
	return startChild(tb, gap.String())
}

func startChild(tb testing.TB, spec string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("child server: %v", err)
	}
	return "http://" + strings.TrimSpace(line)
}

// BenchmarkClientCPU streams `streams` concurrent requests of 200 tokens,
// one token every 20 ms per stream (so each token arrives in its own
// socket read), from a server in a child process, and reports the
// client's CPU per streamed token and the p99 TTFT/ITL error against the
// server's write times. Two rounds of requests per size.
func BenchmarkClientCPU(b *testing.B) {
	for _, streams := range []int{256, 1000} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) {
			const tokens, gap = 200, 20 * time.Millisecond
			url := startStreamServer(b, gap)
			for b.Loop() {
				cpu0 := processCPU()
				res := run(b, Config{BaseURL: url, Model: "m", Concurrency: streams, Requests: int64(2 * streams)}, promptSource(tokens))
				cpu := processCPU() - cpu0
				mono0 := monoNow() - int64(time.Since(res.Start)) // the run start on CLOCK_MONOTONIC

				resp, err := http.Get(url + "/truth")
				if err != nil {
					b.Fatal(err)
				}
				var truth map[string][]int64
				err = json.NewDecoder(resp.Body).Decode(&truth)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				var total int
				var ttftErr, itlErr []time.Duration
				for i := range res.Records {
					rec := &res.Records[i]
					if !rec.OK() || rec.OutputTokens != tokens {
						b.Fatalf("request %d: %q %s, %d tokens", rec.ID, rec.Error, rec.ErrorMessage, rec.OutputTokens)
					}
					total += rec.OutputTokens
					tt := truth["req-"+strconv.FormatInt(rec.ID, 10)]
					if len(tt) != len(rec.TokenTimes) {
						b.Fatalf("request %d: %d truth times for %d chunks", rec.ID, len(tt), len(rec.TokenTimes))
					}
					for k, w := range tt {
						off := time.Duration(w - mono0)
						if k == 0 {
							ttftErr = append(ttftErr, rec.TokenTimes[0]-off)
						} else {
							itlErr = append(itlErr, (rec.TokenTimes[k]-rec.TokenTimes[k-1])-time.Duration(w-tt[k-1]))
						}
					}
				}
				perToken := float64(cpu.Nanoseconds()) / float64(total) / 1e3
				b.ReportMetric(perToken, "cpu-µs/token")
				b.ReportMetric(float64(p99abs(ttftErr).Microseconds())/1e3, "ttft-err-p99-ms")
				b.ReportMetric(float64(p99abs(itlErr).Microseconds())/1e3, "itl-err-p99-ms")
				b.Logf("%d streams: %d tokens in %v, client CPU %v = %.2f µs/token; truth error p99 ttft %v itl %v; peak in flight %d",
					streams, total, res.Elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), perToken,
					p99abs(ttftErr), p99abs(itlErr), res.PeakInFlight)
			}
		})
	}
}

// BenchmarkReadFloor is the floor under BenchmarkClientCPU: the CPU a
// bare Go reader (a goroutine per connection, one conn.Read per event, a
// timestamp per read, no HTTP, no parsing) spends per token-sized event
// arriving at the same cadence on the same number of loopback
// connections. What BenchmarkClientCPU reports above this is the client's
// own cost; the floor itself is the kernel's TCP receive path and the Go
// poller, which no Go client avoids.
func BenchmarkReadFloor(b *testing.B) {
	for _, streams := range []int{256, 1000} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) {
			const tokens, gap = 200, 20 * time.Millisecond
			addr := strings.TrimPrefix(startChild(b, fmt.Sprintf("raw:%v,%d", gap, tokens)), "http://")
			for b.Loop() {
				cpu0 := processCPU()
				start := time.Now()
				var wg sync.WaitGroup
				var mu sync.Mutex
				total := 0
				for range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c, err := net.Dial("tcp", addr)
						if err != nil {
							b.Error(err)
							return
						}
						defer c.Close()
						buf := make([]byte, 16<<10)
						n := 0
						var at time.Duration
						for {
							m, err := c.Read(buf)
							at = time.Since(start)
							n += m
							if err != nil {
								break
							}
						}
						_ = at
						mu.Lock()
						total += n
						mu.Unlock()
					}()
				}
				wg.Wait()
				cpu := processCPU() - cpu0
				events := total / len(sse.AppendData(nil, []byte(benchContent)))
				perToken := float64(cpu.Nanoseconds()) / float64(events) / 1e3
				b.ReportMetric(perToken, "cpu-µs/token")
				b.Logf("%d streams: %d events, bare-reader CPU %v = %.2f µs/event", streams, events, cpu.Round(time.Millisecond), perToken)
			}
		})
	}
}
