//go:build unix

package simserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// rawLoad is a minimal closed-loop streaming client used to measure the
// server alone: streams goroutines, each sending requests back to back
// until the context ends; it counts content chunks.
type rawLoad struct {
	tokens, requests, errors atomic.Int64
}

func (l *rawLoad) run(ctx context.Context, url string, streams, maxTokens int) {
	tr := &http.Transport{MaxIdleConns: streams * 2, MaxIdleConnsPerHost: streams * 2, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":"%s"}],"max_tokens":%d,"stream":true,"ignore_eos":true}`, strings.Repeat("hello ", 64), maxTokens)
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := cl.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						l.errors.Add(1)
					}
					continue
				}
				br := bufio.NewReader(resp.Body)
				for {
					line, err := br.ReadSlice('\n')
					if bytes.HasPrefix(line, []byte(`data: {`)) && bytes.Contains(line, []byte(`"content":"`)) && !bytes.Contains(line, []byte(`"content":""`)) {
						l.tokens.Add(1)
					}
					if err != nil {
						break
					}
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				l.requests.Add(1)
			}
		}()
	}
	wg.Wait()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPacing runs 64, 256 and 1000 concurrent streams (a minimal Go
// client, closed loop, 256 output tokens, steps ×0.5) against the server for
// a few seconds each and reports the token rate, pacing lag (when each
// token was written, just before its write(2), minus its simulated time)
// and process CPU
// per token (client and server together). The server's share of the CPU is
// in a profile, under the pprof label knee=server:
//
//	go test ./internal/simserver -run '^$' -bench Pacing -benchtime 1x
//	go test ./internal/simserver -run '^$' -bench 'Pacing/streams=1000' -benchtime 1x -cpuprofile cpu.prof -o ss.test
//	go tool pprof -top -tagfocus knee=server ss.test cpu.prof
func BenchmarkPacing(b *testing.B) {
	for _, n := range []int{64, 256, 1000} {
		b.Run(fmt.Sprint("streams=", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				pacingRun(b, n, 0.5, 5*time.Second)
			}
		})
	}
}

func pacingRun(b *testing.B, streams int, scale float64, d time.Duration) {
	cfg := testConfig(b, scale)
	url, srv, err := StartLocal(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var l rawLoad
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.run(ctx, url, streams, 256); close(done) }()
	time.Sleep(2 * time.Second) // warm up: all streams running
	srv.ResetPacingLag()
	t0, c0, k0 := time.Now(), cpuTime(), l.tokens.Load()
	time.Sleep(d)
	el, cpu, tok := time.Since(t0), cpuTime()-c0, l.tokens.Load()-k0
	lag := srv.PacingLag()
	cancel()
	<-done
	st := srv.EngineStats()
	b.ReportMetric(float64(tok)/el.Seconds(), "tok/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(tok)/1e3, "cpu-µs/tok")
	b.ReportMetric(lag.P50MS, "lag-p50-ms")
	b.ReportMetric(lag.P99MS, "lag-p99-ms")
	b.ReportMetric(lag.MaxMS, "lag-max-ms")
	b.Logf("streams=%d running=%d tok/s=%.0f cpu/tok=%.2fµs lag p50=%.3fms p99=%.3fms max=%.3fms errors=%d",
		streams, st.Running, float64(tok)/el.Seconds(), float64(cpu.Nanoseconds())/float64(tok)/1e3, lag.P50MS, lag.P99MS, lag.MaxMS, l.errors.Load())
}
