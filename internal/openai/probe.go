package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ProbeResult says which optional sampling fields a server accepts.
type ProbeResult struct {
	IgnoreEOS bool // "ignore_eos" accepted
	MinTokens bool // "min_tokens" accepted
	// Status and Message are from the last probe response (Message is the
	// error body, truncated, when the server refused).
	Status  int
	Message string
}

// Probe sends tiny non-streaming requests (max_tokens 1) to endpoint to
// learn whether the server accepts ignore_eos and min_tokens. A 400/422
// response whose body names a field means that field is refused; the probe
// then retries without it. Any other failure is returned as an error,
// since the main run would fail the same way.
//
// A server that silently ignores unknown fields looks like it accepts them;
// only the output lengths of the run can tell (compare usage with
// max_tokens).
func Probe(ctx context.Context, client *http.Client, endpoint, apiKey, model, api string) (ProbeResult, error) {
	p := Params{API: api, Model: model, Prompt: "Hi", MaxTokens: 1, IgnoreEOS: true, MinTokens: 1, NoStream: true}
	var res ProbeResult
	for attempt := 0; attempt < 3; attempt++ {
		status, msg, err := probeOnce(ctx, client, endpoint, apiKey, p)
		if err != nil {
			return ProbeResult{}, err
		}
		res.Status, res.Message = status, msg
		if status/100 == 2 {
			res.IgnoreEOS, res.MinTokens = p.IgnoreEOS, p.MinTokens > 0
			return res, nil
		}
		if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
			return res, fmt.Errorf("probe %s: HTTP %d: %s", endpoint, status, msg)
		}
		namedEOS := p.IgnoreEOS && strings.Contains(msg, "ignore_eos")
		namedMin := p.MinTokens > 0 && strings.Contains(msg, "min_tokens")
		if !namedEOS && !namedMin {
			if !p.IgnoreEOS && p.MinTokens == 0 {
				return res, fmt.Errorf("probe %s: HTTP %d without optional fields: %s", endpoint, status, msg)
			}
			// Refused without naming a field: retry with none of them to
			// tell a refusal of the fields from a broken request.
			p.IgnoreEOS, p.MinTokens = false, 0
			continue
		}
		if namedEOS {
			p.IgnoreEOS = false
		}
		if namedMin {
			p.MinTokens = 0
		}
	}
	return res, nil
}

func probeOnce(ctx context.Context, client *http.Client, endpoint, apiKey string, p Params) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(AppendBody(nil, p)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("probe %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}
