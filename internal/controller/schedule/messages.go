package schedule

// This file decides whether two Unschedulable messages say the same, so
// that an event is recorded only for a new cause.

import (
	"strings"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// sameCause reports whether two messages of a condition of reason say the
// same: for Unschedulable, whose message counts free room, they may differ
// in their numbers (sameWords); others must be equal.
func sameCause(reason, a, b string) bool {
	if reason == v1alpha1.ReasonUnschedulable {
		return sameWords(a, b)
	}
	return a == b
}

// sameWords reports whether two messages differ in their numbers at most:
// an Unschedulable message counts each cluster's free room, which moves
// with every pod in the member, and the decision is taken again each
// minute; the condition says the latest, an event only a new cause.
func sameWords(a, b string) bool {
	return withoutQuantities(a) == withoutQuantities(b)
}

// withoutQuantities replaces each quantity in s with "#": a number that
// starts a word ("2", "0.5", the 0 and 3 of "0/3") with an optional
// Kubernetes quantity suffix ("3Gi", "500m") and ends it. A word that goes
// on as a name does ("member-1", "1east", "2a", a cluster named "7"
// before its colon) is left as it is, so that two messages about
// different clusters never read the same.
func withoutQuantities(s string) string {
	var out strings.Builder
	for i := 0; i < len(s); {
		if i > 0 && !strings.ContainsRune(quantityStarts, rune(s[i-1])) {
			out.WriteByte(s[i])
			i++
			continue
		}
		if n := quantityLen(s[i:]); n > 0 {
			out.WriteByte('#')
			i += n
			continue
		}
		out.WriteByte(s[i])
		i++
	}
	return out.String()
}

// quantityStarts are the characters after which a quantity may start.
const quantityStarts = " \t\n:,;(=/"

// quantitySuffixes are the suffixes of resource.Quantity, longest first.
var quantitySuffixes = []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"}

// quantityLen is the length of the quantity s starts with, 0 if it does
// not start with one.
func quantityLen(s string) int {
	n := digits(s)
	if n == 0 {
		return 0
	}
	if n < len(s)-1 && s[n] == '.' {
		if f := digits(s[n+1:]); f > 0 {
			n += 1 + f
		}
	}
	for _, suffix := range quantitySuffixes {
		if strings.HasPrefix(s[n:], suffix) && endsWord(s[n+len(suffix):]) {
			return n + len(suffix)
		}
	}
	if endsWord(s[n:]) {
		return n
	}
	return 0
}

// digits counts the ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// endsWord reports whether rest (what follows a candidate quantity) ends
// it: nothing, a character that cannot go on in a name, or a full stop
// that ends a sentence. A colon goes on too: it follows a cluster's name.
func endsWord(rest string) bool {
	switch {
	case rest == "":
		return true
	case rest[0] == '.':
		return len(rest) == 1 || !inName(rest[1])
	default:
		return !inName(rest[0]) && rest[0] != ':'
	}
}

// inName reports whether c may be part of a cluster's or an object's name.
func inName(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}
