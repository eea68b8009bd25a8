package record

import "testing"

// The line keeps ErrorKinds' order for either key type and leaves
// out kinds with no failure.
func TestErrorKindsLineOrderAndKeys(t *testing.T) {
	byKind := map[ErrorKind]int{ErrorKinds[2]: 3, ErrorKinds[0]: 12, ErrorKinds[1]: 0}
	byName := map[string]int{string(ErrorKinds[2]): 3, string(ErrorKinds[0]): 12}
	want := string(ErrorKinds[0]) + ": 12, " + string(ErrorKinds[2]) + ": 3"
	if got := ErrorKindsLine(byKind); got != want {
		t.Errorf("by kind: %q, want %q", got, want)
	}
	if got := ErrorKindsLine(byName); got != want {
		t.Errorf("by name: %q, want %q", got, want)
	}
}
