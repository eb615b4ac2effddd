package gateway

import "testing"

func TestSplitName(t *testing.T) {
	for _, tc := range []struct{ in, name, member string }{
		{"web", "web", ""},
		{"web@alpha", "web", "alpha"},
		{"a@b@c", "a@b", "c"},
		{"web@", "web@", ""}, // no member named: one name, found nowhere
		{"@alpha", "@alpha", ""},
		{"", "", ""},
	} {
		if name, member := splitName(tc.in); name != tc.name || member != tc.member {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", tc.in, name, member, tc.name, tc.member)
		}
	}
}
