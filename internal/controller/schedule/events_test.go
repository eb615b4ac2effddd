package schedule

import "testing"

func TestSameWords(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"same", "no cluster fits", "no cluster fits", true},
		{"free room moved", "member-1: most free on one node: cpu 2, memory 3Gi; 1 reserved", "member-1: most free on one node: cpu 1, memory 12Gi; 4 reserved", true},
		{"another cause", "member-1: most free on one node: cpu 2", "member-1: taint flotilla.io/draining not tolerated", false},
		{"another cluster", "member-1: most free on one node: cpu 2", "member-2: most free on one node: cpu 2", false},
		{"counts", "0/3 clusters fit: 2 lack cpu", "1/3 clusters fit: 1 lack cpu", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameWords(tc.a, tc.b); got != tc.want {
				t.Errorf("sameWords(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
