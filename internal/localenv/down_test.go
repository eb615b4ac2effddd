package localenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPurgeWithoutAnEnvironment: `down --purge` of a directory without a
// state file (a mistyped --state-dir) removes none of the names an
// environment uses, only a lock a failed `up` left, and the directory
// when it is then empty.
func TestPurgeWithoutAnEnvironment(t *testing.T) {
	t.Run("a directory of the user's", func(t *testing.T) {
		dir := t.TempDir()
		for _, f := range []string{"clusters/prod/app.yaml", "pki/ca.crt", "kubeconfig", ".lock"} {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var out strings.Builder
		if err := Down(context.Background(), dir, true, &out); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"clusters/prod/app.yaml", "pki/ca.crt", "kubeconfig"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if !strings.Contains(out.String(), "Left clusters, pki, kubeconfig in") {
			t.Errorf("output %q does not say what it left", out.String())
		}
	})
	t.Run("only a lock", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "env")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".lock"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Down(context.Background(), dir, true, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the directory stays (stat: %v)", err)
		}
	})
}
