package manager

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundNote(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int // length in bytes
	}{
		{name: "short", in: "cluster member-1 is Ready", want: 25},
		{name: "exactly the limit", in: strings.Repeat("a", noteLimit), want: noteLimit},
		{name: "a CEL compile error", in: strings.Repeat("a", 3000), want: noteLimit},
		{name: "cut inside a character", in: strings.Repeat("a", noteLimit-4) + strings.Repeat("é", 10), want: noteLimit - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := boundNote(tc.in)
			if len(got) != tc.want || !utf8.ValidString(got) {
				t.Errorf("boundNote() is %d bytes (valid UTF-8 %v), want %d", len(got), utf8.ValidString(got), tc.want)
			}
			if len(tc.in) > noteLimit && !strings.HasSuffix(got, "...") {
				t.Errorf("a cut note %q does not end in ...", got[len(got)-10:])
			}
		})
	}
}
