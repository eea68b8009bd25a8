// Package cmdhelptest reads rendered help in tests: the flags listed under
// one group's title.
package cmdhelptest

import "strings"

// Section is the lines help lists under "title:", up to the next blank
// line; "" when help has no such group.
func Section(help, title string) string {
	i := strings.Index(help, "\n"+title+":\n")
	if i < 0 {
		return ""
	}
	s := help[i+len(title)+3:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}
