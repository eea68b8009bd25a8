package sweep

import (
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
		{"unknown column", "concurrency,throughput_rps,ttft_p95\n1,2,3\n", `line 1, column 3: unknown column "ttft_p95"`},
		{"two loads", "concurrency,rate_rps,output_tps\n", `line 1, column 2: a second load column "rate_rps"`},
		{"duplicate", "concurrency,output_tps,output_tps\n", `line 1, column 3: column "output_tps" repeats column 2`},
		{"non-numeric", "concurrency,output_tps,ttft_p95_ms\n1,100,40\n2,200,fast\n", `line 3, column 3 (ttft_p95_ms): "fast" is not a number`},
		{"empty cell", "concurrency,output_tps\n1,\n", "line 2, column 2 (output_tps): empty cell"},
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
