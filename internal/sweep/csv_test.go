package sweep

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

func TestReadCSV(t *testing.T) {
	f, err := os.Open("testdata/vllm_sweep.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := ReadCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Kind != Concurrency || len(tab.Steps) != 7 {
		t.Fatalf("kind %q, %d steps", tab.Kind, len(tab.Steps))
	}
	s := tab.Steps[4]
	if s.Load.Value != 16 || s.Summary.OutputTokenThroughputTPS != 1510 || s.Summary.TTFT.P95 != 140 || s.Summary.ITL.P95 != 13.5 || s.Line != 7 {
		t.Errorf("step 4 = %+v", s)
	}
	if tab.Steps[6].Summary.ErrorRate != 0.01 || !tab.Has("e2e_p95_ms") || tab.Has("tpot_p50_ms") {
		t.Errorf("columns %v, error rate %v", tab.Columns, tab.Steps[6].Summary.ErrorRate)
	}
	r, err := Analyze(tab.Steps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Knee.Load != 16 {
		t.Errorf("knee %v: %s", r.Knee.Load, r.Knee.Reason)
	}
}

func TestReadCSVSecondsAndRate(t *testing.T) {
	tab, err := ReadCSV(strings.NewReader("rate_rps,throughput_rps,ttft_p95_s,goodput_rps\n1,1,0.25,1\n2,1.9,1.5,1.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Kind != Rate || tab.Steps[1].Summary.TTFT.P95 != 1500 || *tab.Steps[1].Summary.GoodputRPS != 1.2 || !tab.Has("ttft_p95_ms") {
		t.Errorf("got %+v", tab)
	}
}

func TestReadCSVErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "empty file: want a header line such as concurrency,"},
		{"only comments", "# nothing\n", "empty file"},
		{"no load column", "throughput_rps,ttft_p95_ms\n1,2\n", "line 1: no load column"},
		{"no throughput", "concurrency,ttft_p95_ms\n1,2\n", "line 1: no throughput column"},
		{"unknown column", "concurrency,throughput_rps,ttft_p95\n1,2,3\n", `line 1, column 3: column "ttft_p95" has no unit`},
		{"two loads", "concurrency,rate_rps,output_tps\n", `line 1, column 2: a second load column "rate_rps"`},
		{"duplicate", "concurrency,output_tps,output_tps\n", `line 1, column 3: column "output_tps" repeats column 2`},
		{"non-numeric", "concurrency,output_tps,ttft_p95_ms\n1,100,40\n2,200,fast\n", `line 3, column 3 (ttft_p95_ms): "fast" is not a number`},
		{"empty cell", "concurrency,output_tps\n1,\n", "line 2 has no throughput"},
		{"short row", "concurrency,output_tps,ttft_p95_ms\n1,100\n", "line 2: 2 fields, but the header has 3 columns"},
		{"negative", "concurrency,output_tps\n1,-3\n", "line 2, column 2 (output_tps): -3 is negative"},
		{"zero load", "concurrency,output_tps\n0,3\n", "line 2, column 1 (concurrency): load 0"},
		{"percent rate", "concurrency,output_tps,error_rate\n1,3,5\n", "rates are fractions"},
		{"header only", "concurrency,output_tps\n", "line 1: a header but no data lines"},
		{"bad quote", "concurrency,output_tps\n1,\"3\n", "line 2, column"},
		{"NaN", "concurrency,output_tps\n1,NaN\n", `"NaN" is not a number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// FuzzReadCSV: any input gives steps or an error naming where, never a panic,
// and every step it returns is analysable.
func FuzzReadCSV(f *testing.F) {
	b, _ := os.ReadFile("testdata/vllm_sweep.csv")
	f.Add(string(b))
	f.Add("rate_rps,throughput_rps,ttft_p95_s\n1,1,0.2\n")
	f.Add("concurrency,output_tps\n1,\"3\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := ReadCSV(strings.NewReader(in))
		if err != nil {
			if !strings.Contains(err.Error(), "line") && !strings.Contains(err.Error(), "empty file") {
				t.Errorf("error without a line: %v", err)
			}
			return
		}
		if len(tab.Steps) == 0 {
			t.Fatal("no steps and no error")
		}
		if _, err := Analyze(tab.Steps, Options{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWriteCSVRoundTrip(t *testing.T) {
	steps := curve(geometric(1, 5), []float64{100, 200, 400, 410, 415}, []float64{10, 11, 12, 40, 90})
	g := 1.5
	for i := range steps {
		steps[i].Summary.GoodputRPS = &g
		steps[i].Summary.ErrorRate = 0.01 * float64(i)
	}
	var b strings.Builder
	if err := WriteCSV(&b, Concurrency, steps); err != nil {
		t.Fatal(err)
	}
	tab, err := ReadCSV(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for i, s := range tab.Steps {
		if s.Load != steps[i].Load || s.Summary.TTFT.P95 != steps[i].Summary.TTFT.P95 || s.Summary.OutputTokenThroughputTPS != steps[i].Summary.OutputTokenThroughputTPS ||
			*s.Summary.GoodputRPS != 1.5 || s.Summary.ErrorRate != steps[i].Summary.ErrorRate {
			t.Errorf("step %d: %+v", i, s)
		}
	}
}

// Load tables as people write them: other column names and units, TSV,
// vLLM's printed labels. Each reads to the same canonical step values.
func TestReadCSVColumnNamesPeopleUse(t *testing.T) {
	cases := []struct {
		name, in string
		kind     string
		check    func(s *Step) bool
	}{
		{"load, throughput_rps, p95_ttft_s", "load,throughput_rps,p95_ttft_s\n1,0.9,0.045\n2,1.8,0.047\n4,3.5,0.052\n",
			Concurrency, func(s *Step) bool { return s.Summary.RequestThroughputRPS == 3.5 && s.Summary.TTFT.P95 == 52 }},
		{"concurrency, request_throughput, p95_ttft_ms", "concurrency,request_throughput,p95_ttft_ms\n1,0.9,45\n2,1.8,47\n4,3.5,52\n",
			Concurrency, func(s *Step) bool { return s.Summary.RequestThroughputRPS == 3.5 && s.Summary.TTFT.P95 == 52 }},
		{"request_rate, output_throughput, ttft_p95_ms, mean_itl_ms", "request_rate,output_throughput,ttft_p95_ms,mean_itl_ms,median_e2el_ms\n1,115,45,8.1,1100\n2,230,47,8.3,1120\n4,448,52,8.9,1180\n",
			Rate, func(s *Step) bool {
				return s.Summary.OutputTokenThroughputTPS == 448 && s.Summary.ITL.Mean == 8.9 && s.Summary.E2E.P50 == 1180
			}},
		{"TSV with vLLM's printed labels", "Maximum request concurrency\tRequest throughput (req/s)\tOutput token throughput (tok/s)\tP95 TTFT (ms)\tMedian TPOT (ms)\n" +
			"1\t0.9\t115\t45\t8\n2\t1.8\t230\t47\t8.2\n4\t3.5\t448\t52\t8.8\n",
			"", nil},
		{"qps, tokens/s, TTFT p99 (s), error %", "qps,tokens/s,TTFT p99 (s),error %\n1,115,0.06,0\n2,230,0.07,1.5\n4,448,0.09,2\n",
			Rate, func(s *Step) bool {
				return s.Summary.OutputTokenThroughputTPS == 448 && s.Summary.TTFT.P99 == 90 && s.Summary.ErrorRate == 0.02
			}},
		{"users, rps column spelled req/s, ignored extra columns", "users,req/s,ttft_p95_ms,gpu,notes\n1,0.9,45,H100,warm\n2,1.8,47,H100,\n4,3.5,52,H100,hot\n",
			Concurrency, func(s *Step) bool { return s.Summary.RequestThroughputRPS == 3.5 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab, err := ReadCSV(strings.NewReader(c.in))
			if c.kind == "" { // vLLM's "Maximum request concurrency" is not a load name knee guesses
				if err == nil || !strings.Contains(err.Error(), "no load column") {
					t.Fatalf("got %v, want no load column", err)
				}
				in := strings.Replace(c.in, "Maximum request concurrency", "max_concurrency", 1)
				if tab, err = ReadCSV(strings.NewReader(in)); err != nil {
					t.Fatal(err)
				}
				s := tab.Steps[2]
				if s.Summary.RequestThroughputRPS != 3.5 || s.Summary.OutputTokenThroughputTPS != 448 || s.Summary.TTFT.P95 != 52 || s.Summary.TPOT.P50 != 8.8 {
					t.Errorf("TSV step: %+v", s.Summary)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tab.Kind != c.kind || len(tab.Steps) != 3 || tab.Steps[2].Load.Value != 4 {
				t.Fatalf("kind %q, %d steps", tab.Kind, len(tab.Steps))
			}
			if !c.check(&tab.Steps[2]) {
				t.Errorf("step 3: %+v", tab.Steps[2].Summary)
			}
			if _, err := Analyze(tab.Steps, Options{}); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestReadCSVNotesAndMissing(t *testing.T) {
	tab, err := ReadCSV(strings.NewReader("load,throughput_rps,ttft_p95_ms,gpu\n1,1,40,a\n2,2,,a\n4,3,90,a\n"))
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(tab.Notes, " | ")
	if !strings.Contains(notes, `"load" does not say concurrency or request rate`) || !strings.Contains(notes, `ignored columns: "gpu"`) ||
		!strings.Contains(notes, "only some steps give ttft_p95_ms") {
		t.Errorf("notes: %s", notes)
	}
	if tab.Has("ttft_p95_ms") || !math.IsNaN(tab.Steps[1].Summary.TTFT.P95) || !math.IsNaN(tab.Steps[0].Summary.OutputTokenThroughputTPS) ||
		!math.IsNaN(tab.Steps[0].Summary.ErrorRate) {
		t.Errorf("missing values must be NaN, not 0: %+v", tab.Steps[1].Summary)
	}
	// A missing value stays missing through JSON (null or absent) and CSV (an empty cell).
	b, err := json.Marshal(tab.Steps[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"output_tps":null`) || !strings.Contains(string(b), `"error_rate":null`) {
		t.Errorf("step JSON %s", b)
	}
	var back Step
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(back.Summary.OutputTokenThroughputTPS) || back.Summary.TTFT.P95 != 40 {
		t.Errorf("JSON round trip: %v %+v", err, back.Summary)
	}
	var w strings.Builder
	if err := WriteCSV(&w, Concurrency, tab.Steps); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "\n2,,2,") {
		t.Errorf("WriteCSV writes a missing value as something other than an empty cell:\n%s", w.String())
	}
}

// A load given twice is refused, naming both lines.
func TestReadCSVRepeatedLoad(t *testing.T) {
	_, err := ReadCSV(strings.NewReader("concurrency,throughput_rps\n1,1\n# again\n4,3\n2,2\n4,3.1\n"))
	if err == nil || !strings.Contains(err.Error(), "line 6 repeats the load 4 in flight of line 4") {
		t.Errorf("got %v", err)
	}
}
