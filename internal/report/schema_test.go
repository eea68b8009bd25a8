package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
)

// jsonKeys are the keys a struct writes in JSON (embedded structs' keys
// inlined), as encoding/json names them.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			keys = append(keys, jsonKeys(f.Type)...)
		case name != "":
			keys = append(keys, name)
		case f.IsExported():
			keys = append(keys, f.Name)
		}
	}
	return keys
}

// TestSummarySchemaDescribesEveryKey: docs/schema/summary.schema.json names
// every key knee writes at the top of a summary (the figures, and what a
// report adds), and refuses any other, so a key added to the code without
// its description fails here and a key dropped from the code fails a
// consumer's validation rather than passing unnoticed.
func TestSummarySchemaDescribesEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", "summary.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties            map[string]json.RawMessage `json:"properties"`
		UnevaluatedProperties *bool                      `json:"unevaluatedProperties"`
		Defs                  struct {
			Figures struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"figures"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.UnevaluatedProperties == nil || *schema.UnevaluatedProperties {
		t.Errorf("the schema allows keys it does not describe at the top: want \"unevaluatedProperties\": false")
	}
	var missing []string
	for _, k := range jsonKeys(reflect.TypeFor[stats.Summary]()) {
		if _, ok := schema.Defs.Figures.Properties[k]; !ok {
			missing = append(missing, "$defs.figures."+k)
		}
	}
	for _, k := range jsonKeys(reflect.TypeFor[jsonExtra]()) {
		if _, ok := schema.Properties[k]; !ok {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("summary.schema.json does not describe %s", strings.Join(missing, ", "))
	}
}
