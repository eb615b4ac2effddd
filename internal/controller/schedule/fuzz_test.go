package schedule

import (
	"strings"
	"testing"
)

// FuzzWithoutQuantities checks that any message is normalised without a
// panic, that normalising twice changes nothing more, that a message
// always reads the same as itself, and that a cluster's name (a DNS label
// made of the input) before its colon is never masked as a number.
func FuzzWithoutQuantities(f *testing.F) {
	for _, s := range []string{"member-1: most free on one node: cpu 2, memory 3Gi; 1 reserved", "0/3 clusters fit", "7: x", "cpu 0.5.", "3m-edge: 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := withoutQuantities(s)
		if twice := withoutQuantities(once); twice != once {
			t.Errorf("withoutQuantities(%q) = %q, and again %q", s, once, twice)
		}
		if !sameWords(s, s) {
			t.Errorf("sameWords(%q, itself) = false", s)
		}
		if name := dnsLabel(s); name != "" {
			msg := "x; " + name + ": cpu 2"
			if got, want := withoutQuantities(msg), "x; "+name+": cpu #"; got != want {
				t.Errorf("withoutQuantities(%q) = %q, want %q", msg, got, want)
			}
		}
	})
}

// dnsLabel keeps the lower-case letters, digits and dashes of s, without
// leading or trailing dashes, at most 63 characters.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}
