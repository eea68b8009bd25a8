package loadgen

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sse"
)

// eventReader returns one event per Read, as a socket does when each
// chunk is flushed on its own.
type eventReader struct {
	events [][]byte
	i      int
}

func (e *eventReader) Read(p []byte) (int, error) {
	if e.i == len(e.events) {
		return 0, io.EOF
	}
	n := copy(p, e.events[e.i])
	e.i++
	return n, nil
}

// vLLM-shaped chunks.
var (
	benchRole    = `{"id":"chatcmpl-b1","object":"chat.completion.chunk","created":1732900000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	benchContent = `{"id":"chatcmpl-b1","object":"chat.completion.chunk","created":1732900000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`
	benchFinish  = `{"id":"chatcmpl-b1","object":"chat.completion.chunk","created":1732900000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`
	benchUsage   = `{"id":"chatcmpl-b1","object":"chat.completion.chunk","created":1732900000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":512,"total_tokens":768,"completion_tokens":256}}`
)

func benchStream(chunks int) [][]byte {
	ev := func(s string) []byte { return sse.AppendData(nil, []byte(s)) }
	out := [][]byte{ev(benchRole)}
	for range chunks {
		out = append(out, ev(benchContent))
	}
	return append(out, ev(benchFinish), ev(benchUsage), ev("[DONE]"))
}

// BenchmarkChunkPath measures the client's per-chunk path — SSE read,
// chunk decode, timestamp and record append — over an in-memory stream of
// 256 content chunks, one per Read. ns/chunk and allocs/chunk are the
// figures; the per-stream costs (the record's slices) are spread over the
// 256 chunks, as in a real stream.
func BenchmarkChunkPath(b *testing.B) {
	const chunks = 256
	events := benchStream(chunks)
	r := &Run{start: time.Now(), hardCtx: context.Background()}
	st := streamPool.Get().(*stream)
	body := &eventReader{events: events}
	b.ReportAllocs()
	cpu0 := cpuclock.Process()
	for b.Loop() {
		body.i = 0
		rec := record.Request{MaxTokens: chunks}
		r.readStream(context.Background(), st, body, &rec)
		if len(rec.TokenTimes) != chunks || rec.OutputTokens != chunks || !rec.OK() {
			b.Fatalf("chunks %d out %d err %q %s", len(rec.TokenTimes), rec.OutputTokens, rec.Error, rec.ErrorMessage)
		}
	}
	cpu := cpuclock.Process() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/chunks, "ns/chunk")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/chunks, "cpu-ns/chunk")
	b.ReportMetric(float64(testing.AllocsPerRun(1, func() {
		body.i = 0
		rec := record.Request{MaxTokens: chunks}
		r.readStream(context.Background(), st, body, &rec)
	}))/chunks, "allocs/chunk")
}
