package override

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// imageRef is a container image reference split into its parts:
// [registry/]path[:tag][@digest]. Parts that are absent are empty.
type imageRef struct {
	// registry is the host[:port], e.g. "r.example.com" or "localhost:5000".
	registry string
	// path is the repository path, e.g. "library/nginx".
	path string
	// tag is the tag without ':'.
	tag string
	// digest is the digest without '@', e.g. "sha256:...".
	digest string
}

var (
	// registryPattern matches a registry host (a DNS name, or an IPv6
	// address in brackets) with an optional port.
	registryPattern = regexp.MustCompile(`^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::[0-9]+)?$`)
	// pathComponentPattern matches one '/'-separated component of a
	// repository path.
	pathComponentPattern = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	// tagPattern matches a tag.
	tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// digestPattern matches a digest: algorithm ':' encoded.
	digestPattern = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[A-Za-z0-9=_-]{32,}$`)
	// sha256Pattern matches the encoded part of a sha256 digest.
	sha256Pattern = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// parseImage splits an image reference into its parts. The first path
// component is taken as a registry only if it contains '.' or ':' or is
// "localhost"; no default registry or "library/" prefix is added.
func parseImage(s string) (imageRef, error) {
	if s == "" {
		return imageRef{}, errors.New("image reference is empty")
	}
	var ref imageRef
	name := s
	if at := strings.IndexByte(name, '@'); at >= 0 {
		name, ref.digest = name[:at], name[at+1:]
		if err := checkDigest(ref.digest); err != nil {
			return imageRef{}, fmt.Errorf("image %q: %w", s, err)
		}
	}
	if colon := strings.LastIndexByte(name, ':'); colon > strings.LastIndexByte(name, '/') {
		name, ref.tag = name[:colon], name[colon+1:]
		if err := checkTag(ref.tag); err != nil {
			return imageRef{}, fmt.Errorf("image %q: %w", s, err)
		}
	}
	if first, rest, ok := strings.Cut(name, "/"); ok && readsAsRegistry(first) {
		ref.registry, name = first, rest
		if err := checkRegistry(ref.registry); err != nil {
			return imageRef{}, fmt.Errorf("image %q: %w", s, err)
		}
	}
	ref.path = name
	if err := checkPath(ref.path); err != nil {
		return imageRef{}, fmt.Errorf("image %q: %w", s, err)
	}
	return ref, nil
}

// String formats the reference as [registry/]path[:tag][@digest].
func (r imageRef) String() string {
	var b strings.Builder
	if r.registry != "" {
		b.WriteString(r.registry)
		b.WriteByte('/')
	}
	b.WriteString(r.path)
	if r.tag != "" {
		b.WriteByte(':')
		b.WriteString(r.tag)
	}
	if r.digest != "" {
		b.WriteByte('@')
		b.WriteString(r.digest)
	}
	return b.String()
}

// override returns r with the overrider's non-empty parts replacing its
// own. A tag drops the digest and a digest drops the tag, unless the
// overrider sets both, which keeps both.
func (r imageRef) override(ov *v1alpha1.ImageOverrider) (imageRef, error) {
	if ov.Registry != "" {
		if err := checkRegistry(ov.Registry); err != nil {
			return imageRef{}, err
		}
		r.registry = ov.Registry
	}
	if ov.Repository != "" {
		if err := checkPath(ov.Repository); err != nil {
			return imageRef{}, err
		}
		r.path = ov.Repository
	}
	if ov.Tag != "" {
		if err := checkTag(ov.Tag); err != nil {
			return imageRef{}, err
		}
		r.tag, r.digest = ov.Tag, ""
	}
	if ov.Digest != "" {
		if err := checkDigest(ov.Digest); err != nil {
			return imageRef{}, err
		}
		r.digest = ov.Digest
		if ov.Tag == "" {
			r.tag = ""
		}
	}
	// The result must read back as the parts it was given, or a runtime
	// would pull another image (from its default registry).
	if r.registry != "" && !readsAsRegistry(r.registry) {
		return imageRef{}, fmt.Errorf("registry %q would be read as part of the repository path: a registry needs a '.' or a ':port', or is localhost", r.registry)
	}
	if first, _, ok := strings.Cut(r.path, "/"); ok && r.registry == "" && readsAsRegistry(first) {
		return imageRef{}, fmt.Errorf("repository %q would be read as registry %q: set the registry too", r.path, first)
	}
	return r, nil
}

// readsAsRegistry reports whether the first component of an image
// reference is read as its registry: it contains '.' or ':' or is
// "localhost".
func readsAsRegistry(first string) bool {
	return strings.ContainsAny(first, ".:") || first == "localhost"
}

// checkRegistry reports whether s is a valid host[:port].
func checkRegistry(s string) error {
	if !registryPattern.MatchString(s) {
		return fmt.Errorf("invalid registry %q", s)
	}
	return nil
}

// checkPath reports whether s is a valid repository path.
func checkPath(s string) error {
	if s == "" {
		return errors.New("repository path is empty")
	}
	for _, c := range strings.Split(s, "/") {
		if !pathComponentPattern.MatchString(c) {
			return fmt.Errorf("invalid repository path %q", s)
		}
	}
	return nil
}

// checkTag reports whether s is a valid tag.
func checkTag(s string) error {
	if !tagPattern.MatchString(s) {
		return fmt.Errorf("invalid tag %q", s)
	}
	return nil
}

// checkDigest reports whether s is a valid digest; a sha256 digest must
// have 64 lowercase hex digits.
func checkDigest(s string) error {
	if !digestPattern.MatchString(s) {
		return fmt.Errorf("invalid digest %q", s)
	}
	if algo, encoded, _ := strings.Cut(s, ":"); algo == "sha256" && !sha256Pattern.MatchString(encoded) {
		return fmt.Errorf("invalid digest %q: sha256 needs 64 lowercase hex digits", s)
	}
	return nil
}

// applyImage applies an image overrider to the selected containers of a
// pod spec.
func applyImage(pod map[string]any, ov *v1alpha1.ImageOverrider) error {
	if pod == nil {
		return nil
	}
	cs, err := containersOf(pod)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if !selected(c, ov.ContainerNames) {
			continue
		}
		v := c.fields["image"]
		image, ok := v.(string)
		if v != nil && !ok {
			return fmt.Errorf("container %s: image is a %T, not a string", c, v)
		}
		ref, err := parseImage(image)
		if err != nil {
			return fmt.Errorf("container %s: %w", c, err)
		}
		if ref, err = ref.override(ov); err != nil {
			return fmt.Errorf("container %s: %w", c, err)
		}
		c.fields["image"] = ref.String()
	}
	return nil
}
