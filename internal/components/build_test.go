package components

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyChangesWithThePins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module tools\nrequire k8s.io/kubernetes v1.36.3\n")
	write("go.sum", "sum\n")
	write("etcd/main.go", "package main\n")
	k1, err := Key(dir)
	if err != nil {
		t.Fatal(err)
	}
	write("README.md", "docs do not matter\n")
	if k, _ := Key(dir); k != k1 {
		t.Errorf("key changed with a non-source file: %s -> %s", k1, k)
	}
	write("go.mod", "module tools\nrequire k8s.io/kubernetes v1.36.4\n")
	k2, _ := Key(dir)
	if k2 == k1 {
		t.Errorf("key unchanged after a pin change")
	}
	write("etcd/main.go", "package main // changed\n")
	if k3, _ := Key(dir); k3 == k2 {
		t.Errorf("key unchanged after a source change")
	}
}

func TestVersionLDFlags(t *testing.T) {
	flags := versionLDFlags("v1.36.3")
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v1.36.3",
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=36",
		"-X k8s.io/client-go/pkg/version.gitVersion=v1.36.3",
	} {
		if !strings.Contains(flags, want) {
			t.Errorf("ldflags lack %q: %s", want, flags)
		}
	}
}

func TestSetValidate(t *testing.T) {
	dir := t.TempDir()
	s := Set{Dir: dir}
	if err := s.Validate(); err == nil {
		t.Fatal("empty directory validated")
	}
	for _, b := range Binaries {
		if err := os.WriteFile(s.Path(b), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "missing kwok stage") {
		t.Fatalf("Validate() = %v, want missing stages", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "stages"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range s.StageFiles() {
		if err := os.WriteFile(f, []byte("kind: Stage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("complete set: %v", err)
	}
	if err := os.Chmod(s.Path(Kwok), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "not executable") {
		t.Errorf("Validate() = %v, want not executable", err)
	}
}

// TestEnsureGivenDirIsCanonical: a components directory given relative or
// through a symlink comes back absolute and resolved, as processes started
// from it are named in /proc (and a relative path would be looked for
// relative to a process's working directory).
func TestEnsureGivenDirIsCanonical(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "real")
	s := Set{Dir: real}
	if err := os.MkdirAll(filepath.Join(real, "stages"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range Binaries {
		if err := os.WriteFile(s.Path(b), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range s.StageFiles() {
		if err := os.WriteFile(f, []byte("kind: Stage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, given := range []string{"real", "./link", filepath.Join(root, "link")} {
		got, err := Ensure(t.Context(), Options{Dir: given})
		if err != nil {
			t.Fatalf("Ensure(%s): %v", given, err)
		}
		if got.Dir != real {
			t.Errorf("Ensure(%s).Dir = %s, want %s", given, got.Dir, real)
		}
	}
}

// TestCanonicalOfAMissingDirectory: a cache directory not created yet
// under a symlinked parent comes back under the parent's target.
func TestCanonicalOfAMissingDirectory(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "home"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := canonical(filepath.Join(root, "link", ".cache", "flotilla"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "home", ".cache", "flotilla"); got != want {
		t.Errorf("canonical = %s, want %s", got, want)
	}
}
