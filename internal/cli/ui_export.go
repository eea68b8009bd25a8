package cli

import (
	"fmt"
	"os"

	"github.com/knee-dev/knee/internal/web"
)

// uiExport writes the static copy of knee ui (knee ui --export DIR).
func uiExport(env *Env, dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return Usagef("--export %q: a file exists there; want a directory to write the site into (created if missing)", dir)
	}
	n, err := web.Export(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote knee ui to %s (%.1f MB, the simulator compressed as static/knee.wasm.gz)\n", dir, float64(n)/1e6)
	fmt.Fprintln(env.Stdout, "Serve it with any static web server, e.g.: python3 -m http.server -d "+dir+"  (the runs pages need knee ui)")
	return nil
}
