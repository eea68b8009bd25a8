package cli

import (
	"strings"
	"testing"
)

func TestUIBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ui", "--addr", "nonsense"}, "--addr"},
		{[]string{"ui", "--url", "ftp://x", "--model", "m"}, "--url"},
		{[]string{"ui", "--url", "http://127.0.0.1:1"}, "--model is required"},
		{[]string{"ui", "extra"}, "unexpected argument"},
	} {
		code, _, stderr := kneeCmd(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("knee %v: exit %d, %q; want exit 2 naming %s", tc.args, code, stderr, tc.want)
		}
	}
}
