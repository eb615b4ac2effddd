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
		{"milli and fractions", "cpu 500m, memory 0.5Gi.", "cpu 250m, memory 1.25Gi.", true},
		{"a cluster named with a leading digit", "1east: most free on one node: cpu 2", "2west: most free on one node: cpu 2", false},
		{"a cluster named with digits only", "7: taint x not tolerated", "8: taint x not tolerated", false},
		{"a cluster whose name starts like a quantity", "3m-edge: cpu 1", "4m-edge: cpu 1", false},
		{"a later cluster", "a: cpu 1; 1east: cpu 2", "a: cpu 1; 2east: cpu 2", false},
		{"a word after a number", "2 replicas", "2 pods", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameWords(tc.a, tc.b); got != tc.want {
				t.Errorf("sameWords(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
