package livemetrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDashboardQueriesExposedMetrics holds docs/grafana/knee-live.json to the
// endpoint: every knee_client_* series a panel queries is one it serves.
func TestDashboardQueriesExposedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "knee-live.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	mfs, err := New(Info{}).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, mf := range mfs {
		served[mf.GetName()] = true
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			served[mf.GetName()+suf] = true
		}
	}
	name := regexp.MustCompile(`knee_client_[a-z0-9_]+`)
	queried := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				queried++
				if !served[n] {
					t.Errorf("panel %q queries %s, which the endpoint does not serve", p.Title, n)
				}
			}
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") {
				t.Errorf("panel %q: unbalanced parentheses in %s", p.Title, tg.Expr)
			}
		}
	}
	if queried < 10 {
		t.Errorf("only %d metric references in the dashboard", queried)
	}
}
