package override

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "/", want: []string{""}},
		{in: "/spec/replicas", want: []string{"spec", "replicas"}},
		{in: "/metadata/annotations/a~1b", want: []string{"metadata", "annotations", "a/b"}},
		{in: "/x/~01", want: []string{"x", "~1"}},
		{in: "/x/~10", want: []string{"x", "/0"}},
		{in: "spec", wantErr: "must start with '/'"},
		{in: "/a~", wantErr: "invalid escape"},
		{in: "/a~2", wantErr: "invalid escape"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parsePointer(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePointer(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePointer(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parsePointer(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestArrayIndex(t *testing.T) {
	tests := []struct {
		in     string
		want   int
		wantOK bool
	}{
		{"0", 0, true},
		{"12", 12, true},
		{"", 0, false},
		{"01", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1a", 0, false},
		{"-", 0, false},
	}
	for _, tt := range tests {
		got, ok := arrayIndex(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("arrayIndex(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}
