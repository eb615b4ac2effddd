package override

import (
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

const (
	testDigest  = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testDigest2 = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func TestParseImage(t *testing.T) {
	tests := []struct {
		in   string
		want imageRef
	}{
		{"nginx", imageRef{path: "nginx"}},
		{"nginx:1.25", imageRef{path: "nginx", tag: "1.25"}},
		{"library/nginx:1.25", imageRef{path: "library/nginx", tag: "1.25"}},
		{"localhost:5000/a/b:t", imageRef{registry: "localhost:5000", path: "a/b", tag: "t"}},
		{"localhost/a", imageRef{registry: "localhost", path: "a"}},
		{"r.io/a@" + testDigest, imageRef{registry: "r.io", path: "a", digest: testDigest}},
		{"r.io:443/a/b:t@" + testDigest, imageRef{registry: "r.io:443", path: "a/b", tag: "t", digest: testDigest}},
		{"gcr.io/my-proj/app_x/web.v2:v1.2.3-rc.1", imageRef{registry: "gcr.io", path: "my-proj/app_x/web.v2", tag: "v1.2.3-rc.1"}},
		{"[::1]:5000/a:t", imageRef{registry: "[::1]:5000", path: "a", tag: "t"}},
		// A first component without '.' or ':' is a path, not a registry.
		{"myregistry/app:1", imageRef{path: "myregistry/app", tag: "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseImage(tt.in)
			if err != nil {
				t.Fatalf("parseImage(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("parseImage(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Fatalf("String() = %q, want %q", s, tt.in)
			}
		})
	}
}

func TestParseImageErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{"", "empty"},
		{"Nginx", "invalid repository path"},
		{"nginx:", "invalid tag"},
		{"nginx:bad tag", "invalid tag"},
		{"r.io/", "repository path is empty"},
		{"/nginx", "invalid repository path"},
		{"a//b", "invalid repository path"},
		{"nginx@", "invalid digest"},
		{"nginx@sha256:abc", "invalid digest"},
		{"nginx@sha256:" + strings.Repeat("A", 64), "invalid digest"},
		{"nginx@sha256:" + strings.Repeat("a", 63), "64 lowercase hex"},
		{"nginx@" + testDigest + "@" + testDigest, "invalid digest"},
		{"r_x.io:/a", "invalid registry"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseImage(tt.in)
			if err == nil {
				t.Fatalf("parseImage(%q) = %+v, want error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parseImage(%q) error %q, want it to contain %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestImageRefOverride(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		ov      v1alpha1.ImageOverrider
		want    string
		wantErr string
	}{
		{"registry added", "nginx:1.25", v1alpha1.ImageOverrider{Registry: "r.example.com"}, "r.example.com/nginx:1.25", ""},
		{"registry replaced", "localhost:5000/a/b:t", v1alpha1.ImageOverrider{Registry: "r.eu.example.com:443"}, "r.eu.example.com:443/a/b:t", ""},
		{"repository replaced", "r.io/a/b:t", v1alpha1.ImageOverrider{Repository: "mirror/b"}, "r.io/mirror/b:t", ""},
		{"tag set", "nginx", v1alpha1.ImageOverrider{Tag: "1.27"}, "nginx:1.27", ""},
		{"tag drops digest", "r.io/a:t@" + testDigest, v1alpha1.ImageOverrider{Tag: "v2"}, "r.io/a:v2", ""},
		{"digest drops tag", "r.io/a:t", v1alpha1.ImageOverrider{Digest: testDigest2}, "r.io/a@" + testDigest2, ""},
		{"digest replaced", "r.io/a@" + testDigest, v1alpha1.ImageOverrider{Digest: testDigest2}, "r.io/a@" + testDigest2, ""},
		{"tag and digest keep both", "a:old", v1alpha1.ImageOverrider{Tag: "new", Digest: testDigest}, "a:new@" + testDigest, ""},
		{"all parts", "nginx", v1alpha1.ImageOverrider{Registry: "r.io", Repository: "x/y", Tag: "t"}, "r.io/x/y:t", ""},
		{"bad registry", "nginx", v1alpha1.ImageOverrider{Registry: "r.io/x"}, "", "invalid registry"},
		{"bad repository", "nginx", v1alpha1.ImageOverrider{Repository: "X"}, "", "invalid repository path"},
		{"bad tag", "nginx", v1alpha1.ImageOverrider{Tag: ".t"}, "", "invalid tag"},
		{"bad digest", "nginx", v1alpha1.ImageOverrider{Digest: "sha256:xyz"}, "", "invalid digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := parseImage(tt.in)
			if err != nil {
				t.Fatalf("parseImage(%q): %v", tt.in, err)
			}
			got, err := ref.override(&tt.ov)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("override error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("override: %v", err)
			}
			if s := got.String(); s != tt.want {
				t.Fatalf("override(%q) = %q, want %q", tt.in, s, tt.want)
			}
		})
	}
}
