package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ProbeRerankPath learns which rerank path a server answers: one small
// request (two documents) in vLLM's shape to /v1/rerank, then, when that
// is not answered as a rerank, one in TEI's shape to /rerank. A path
// counts only if its answer is 2xx and decodes as a rerank of the
// documents sent, so a server answering 200 with something else (a
// catch-all page) is not taken for a reranker. The error says what each
// path answered.
func ProbeRerankPath(ctx context.Context, client *http.Client, baseURL, apiKey, model string) (string, error) {
	var tried []string
	for _, path := range []string{RerankVLLM, RerankTEI} {
		endpoint, err := EndpointFor(baseURL, APIRerank, path)
		if err != nil {
			return "", err
		}
		p := Params{API: APIRerank, Model: model, Prompt: "which document answers the question", Items: 2, RerankPath: path, NoStream: true}
		why, err := probeRerankOnce(ctx, client, endpoint, apiKey, p)
		if err != nil {
			return "", err
		}
		if why == "" {
			return path, nil
		}
		tried = append(tried, path+": "+why)
	}
	return "", fmt.Errorf("neither rerank path answered a rerank (%s)", strings.Join(tried, "; "))
}

// probeRerankOnce is "" when endpoint answered p as a rerank, else what it
// answered instead; an error only when the server could not be reached.
func probeRerankOnce(ctx context.Context, client *http.Client, endpoint, apiKey string, p Params) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(AppendBody(nil, p)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		// The path, not the endpoint: a base URL may carry a password.
		return "", fmt.Errorf("rerank probe of %s: %w", p.RerankPath, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Sprintf("HTTP %d %s", resp.StatusCode, truncate(strings.TrimSpace(string(body)), 120)), nil
	}
	a, err := DecodeRerank(body, p.Items)
	switch {
	case err != nil:
		return fmt.Sprintf("HTTP %d, not a rerank answer: %v", resp.StatusCode, err), nil
	case a.Err != nil:
		return fmt.Sprintf("HTTP %d with an error: %s", resp.StatusCode, a.Err.Message), nil
	}
	return "", nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
