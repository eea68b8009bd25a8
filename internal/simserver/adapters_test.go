package simserver

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestAdapterModelNames: the server answers for its LoRA adapters' names
// beside the base model, lists them as vLLM does, and still refuses others.
func TestAdapterModelNames(t *testing.T) {
	url, srv := startTest(t, func(c *Config) { c.Adapters = []string{"tenant-a", "tenant-b"} })
	for _, name := range []string{"tenant-a", "tenant-b", srv.Model()} {
		if resp, b := post(t, url, "/v1/completions", `{"model":"`+name+`","prompt":"x","max_tokens":1}`); resp.StatusCode != 200 {
			t.Errorf("model %q: %d %s", name, resp.StatusCode, b)
		}
	}
	if resp, _ := post(t, url, "/v1/completions", `{"model":"tenant-c","prompt":"x","max_tokens":1}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown adapter answered %d, want 404", resp.StatusCode)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ml struct {
		Data []struct {
			ID     string `json:"id"`
			Parent string `json:"parent"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&ml)
	if len(ml.Data) != 3 || ml.Data[1].ID != "tenant-a" || ml.Data[1].Parent != srv.Model() {
		t.Errorf("/v1/models: %+v; want the base and both adapters with the base as parent", ml.Data)
	}
}

// TestAdapterSlotsInTheServer: with one adapter slot, a request of the
// second adapter waits until the first adapter's request ends (as in vLLM
// with --max-loras 1), while the base model's runs beside it.
func TestAdapterSlotsInTheServer(t *testing.T) {
	url, srv := startTest(t, func(c *Config) {
		c.Adapters = []string{"tenant-a", "tenant-b"}
		c.Engine.LoRA.MaxLoRAs = 1
	})
	if srv.adapterID("tenant-b") != 2 || srv.adapterID(srv.Model()) != 0 {
		t.Fatalf("adapter ids: tenant-b %d, base %d; want 2 and 0", srv.adapterID("tenant-b"), srv.adapterID(srv.Model()))
	}
	for _, name := range []string{"tenant-a", "tenant-b", srv.Model()} {
		if resp, b := post(t, url, "/v1/completions", `{"model":"`+name+`","prompt":"x","max_tokens":2}`); resp.StatusCode != 200 {
			t.Errorf("model %q: %d %s", name, resp.StatusCode, b)
		}
	}
	srv.mu.Lock()
	n := srv.eng.LoRALoads()
	srv.mu.Unlock()
	if n != 2 {
		t.Errorf("%d adapter loads after one request of each adapter, want 2", n)
	}
}
