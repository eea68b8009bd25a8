package record

import (
	"fmt"
	"strings"
)

// ErrorKindsLine lists the failures by kind, in ErrorKinds' order,
// e.g. "connect: 12, http_5xx: 3"; stored summaries key them by string.
func ErrorKindsLine[K ~string](kinds map[K]int) string {
	var parts []string
	for _, k := range ErrorKinds {
		if n := kinds[K(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}
