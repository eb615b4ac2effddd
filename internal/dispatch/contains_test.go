package dispatch

import "testing"

func TestContains(t *testing.T) {
	container := func(name, image string, extra ...any) map[string]any {
		c := map[string]any{"name": name, "image": image}
		for i := 0; i+1 < len(extra); i += 2 {
			c[extra[i].(string)] = extra[i+1]
		}
		return c
	}
	tests := []struct {
		name          string
		live, desired any
		want          bool
	}{
		{"equal scalars", "a", "a", true},
		{"different strings", "a", "b", false},
		{"quantity spelled differently", "500m", "0.5", true},
		{"different quantities", "500m", "1", false},
		{"quantities with small exponents", "1e3", "1k", true},
		{"exa suffix", "1E", "1000P", true},
		// Template hashes that read as numbers with huge exponents: parsed
		// as quantities, they would take minutes each.
		{"hashes with huge exponents", "83e4596127331094", "83e4596127331095", false},
		{"hashes with huge negative exponents", "1e-999999999", "2e-999999999", false},
		{"int and float", int64(3), float64(3), true},
		{"different numbers", int64(3), int64(4), false},
		{"bools", true, true, true},
		{"bool differs", true, false, false},
		{"type differs", "3", int64(3), false},
		{"live has extra keys", map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true},
		{"desired key missing in live", map[string]any{"a": "1"}, map[string]any{"a": "1", "c": "3"}, false},
		{"desired empty map missing in live", map[string]any{"a": "1"}, map[string]any{"a": "1", "c": map[string]any{}}, true},
		{"desired null missing in live", map[string]any{}, map[string]any{"c": nil}, true},
		{"nested difference", map[string]any{"a": map[string]any{"b": "1"}}, map[string]any{"a": map[string]any{"b": "2"}}, false},
		{"map vs scalar", "x", map[string]any{"a": "1"}, false},
		{"named list with defaults in live",
			[]any{container("app", "v1", "imagePullPolicy", "IfNotPresent")},
			[]any{container("app", "v1")}, true},
		{"named list with an injected sidecar",
			[]any{container("app", "v1"), container("istio-proxy", "proxy")},
			[]any{container("app", "v1")}, true},
		{"named list order does not matter",
			[]any{container("b", "2"), container("a", "1")},
			[]any{container("a", "1"), container("b", "2")}, true},
		{"named element changed", []any{container("app", "v1")}, []any{container("app", "v2")}, false},
		{"named element missing", []any{container("app", "v1")}, []any{container("app", "v1"), container("log", "v1")}, false},
		{"plain list equal", []any{"a", "b"}, []any{"a", "b"}, true},
		{"plain list with extra element", []any{"a", "b", "c"}, []any{"a", "b"}, false},
		{"plain list reordered", []any{"b", "a"}, []any{"a", "b"}, false},
		{"list vs missing", nil, []any{"a"}, false},
		{"empty list vs missing", nil, []any{}, true},
		{"unnamed objects compared by position", []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, []any{map[string]any{"port": int64(80)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Contains(tt.live, tt.desired); got != tt.want {
				t.Errorf("Contains(%v, %v) = %v, want %v", tt.live, tt.desired, got, tt.want)
			}
		})
	}
}

func TestQuantityLike(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"500m", true},
		{"1.5Gi", true},
		{"1e3", true},
		{"12E+18", true},
		{"2Ei", true},
		{"1e-3", true},
		{"83e4596127331094", false},
		{"1e123", false},
		{"1E-100", false},
		{"", false},
		{"1234567890123456789012345678901234567890123", false},
	}
	for _, tt := range tests {
		if got := quantityLike(tt.in); got != tt.want {
			t.Errorf("quantityLike(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
