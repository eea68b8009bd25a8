package browsertest

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/knee-dev/knee/internal/web"
)

// serveExport writes knee ui --export's site and serves it with a plain
// static file server on loopback: no knee process answers its requests.
func serveExport(t *testing.T, dir string) string {
	t.Helper()
	site := filepath.Join(dir, "site")
	n, err := web.Export(site)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exported site: %d bytes", n)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(site))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// The exported site, served by net/http's FileServer, runs the simulator in
// the browser (WebAssembly): the simulator, lifecycle, lab and Learn pages
// work, and the runs page says it needs knee ui.
func TestExportedSiteInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := serveExport(t, dir)
	b := newBrowser(t, exe, dir)

	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-results')?.dataset.seq) > 0 && !!document.getElementById('pressure')`)
	s := setSim(b, "load", "600")
	if s.TTFT <= 0 || s.Level != "saturated" {
		t.Errorf("static simulator at 600 users: p95 TTFT %.0f ms, badge %q", s.TTFT, s.Level)
	}
	b.shot("export-simulator")

	b.do(chromedp.Navigate(base + "/#lifecycle"))
	b.waitFor(`document.getElementById('lc-status')?.dataset.ready === '1'`)
	b.waitFor(`!!document.querySelector('#pair-queue[data-verdict]')`)
	b.shot("export-lifecycle")

	b.do(chromedp.Navigate(base + "/#lab"))
	b.waitFor(`document.getElementById('lab-verdict')?.textContent === 'queue_pressure'`)
	b.shot("export-lab")

	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1'`)
	b.shot("export-learn")

	b.do(chromedp.Navigate(base + "/#runs"))
	b.waitFor(`document.getElementById('page').textContent.includes('knee ui')`)
	if txt := eval[string](b, `document.getElementById('page').textContent`); !strings.Contains(txt, "run `knee ui`") {
		t.Errorf("the static runs page does not say it needs knee ui: %.300s", txt)
	}
	b.shot("export-runs")
	b.checkClean()
}
