package components

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Environment variables that override where components come from.
const (
	// EnvComponentsDir names a directory with prebuilt binaries to use as is.
	EnvComponentsDir = "FLOTILLA_COMPONENTS_DIR"
	// EnvToolsDir names the hack/tools module to build from.
	EnvToolsDir = "FLOTILLA_TOOLS_DIR"
	// EnvCacheDir names the cache directory builds go into.
	EnvCacheDir = "FLOTILLA_CACHE_DIR"
)

// Options say where the pins are, where builds are cached, and where progress
// is printed. Zero values mean the defaults documented on each field.
type Options struct {
	// Dir, when set, is a directory of prebuilt components used as is
	// (default: $FLOTILLA_COMPONENTS_DIR).
	Dir string
	// ToolsDir is the hack/tools module (default: $FLOTILLA_TOOLS_DIR, else
	// found by walking up from the working directory to the flotilla repo).
	ToolsDir string
	// CacheDir is the build cache (default: $FLOTILLA_CACHE_DIR, else
	// <user cache dir>/flotilla/components).
	CacheDir string
	// Out receives progress lines (default: io.Discard).
	Out io.Writer
}

// mainPackages maps each binary to the package that builds it, relative to
// the tools module.
var mainPackages = map[string]string{
	Etcd:                  "./etcd",
	KubeAPIServer:         "k8s.io/kubernetes/cmd/kube-apiserver",
	KubeControllerManager: "k8s.io/kubernetes/cmd/kube-controller-manager",
	KubeScheduler:         "k8s.io/kubernetes/cmd/kube-scheduler",
	Kwok:                  "sigs.k8s.io/kwok/cmd/kwok",
	MetricsServer:         "sigs.k8s.io/metrics-server/cmd/metrics-server",
}

// moduleDirs names the binaries built from a module of their own, a
// directory of the tools module (the others are built from the tools
// module itself).
var moduleDirs = map[string]string{
	MetricsServer: "metrics-server",
}

// Ensure returns a complete component Set, building it into the cache first
// when the pins changed or nothing was built yet. Concurrent callers (several
// test packages, say) are serialised by a lock file; only the first builds.
func Ensure(ctx context.Context, opts Options) (Set, error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if dir := firstNonEmpty(opts.Dir, os.Getenv(EnvComponentsDir)); dir != "" {
		// Absolute and without symlinks: a process started from a
		// relative path would be looked for relative to its working
		// directory, and one started through a symlink is known by
		// /proc/PID/exe under its target.
		dir, err := canonical(dir)
		if err != nil {
			return Set{}, fmt.Errorf("components directory: %w", err)
		}
		s := Set{Dir: dir}
		if err := s.Validate(); err != nil {
			return Set{}, fmt.Errorf("components directory %s is incomplete: %w", dir, err)
		}
		return s, nil
	}
	toolsDir, err := resolveToolsDir(opts.ToolsDir)
	if err != nil {
		return Set{}, err
	}
	cacheDir, err := resolveCacheDir(opts.CacheDir)
	if err != nil {
		return Set{}, err
	}
	key, err := Key(toolsDir)
	if err != nil {
		return Set{}, err
	}
	if resolved, err := canonical(cacheDir); err == nil {
		cacheDir = resolved // a cache under a symlinked home, say
	}
	set := Set{Dir: filepath.Join(cacheDir, key)}
	if set.Validate() == nil {
		return set, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Set{}, fmt.Errorf("create component cache %s: %w", cacheDir, err)
	}
	unlock, err := lockFile(filepath.Join(cacheDir, ".lock"))
	if err != nil {
		return Set{}, err
	}
	defer unlock()
	if set.Validate() == nil { // built by another process while we waited
		return set, nil
	}
	if err := build(ctx, toolsDir, set, out); err != nil {
		return Set{}, err
	}
	return set, nil
}

// Key hashes everything a build depends on: the tools module's files and the
// Go toolchain version and platform.
func Key(toolsDir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	var files []string
	err := filepath.WalkDir(toolsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash tools module %s: %w", toolsDir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash tools module: %w", err)
		}
		rel, _ := filepath.Rel(toolsDir, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

type moduleInfo struct {
	Path    string
	Version string
	Dir     string
}

func build(ctx context.Context, toolsDir string, set Set, out io.Writer) error {
	start := time.Now()
	fmt.Fprintf(out, "Building Kubernetes components from %s into %s (a cold build takes about 6 minutes on 2 cores)\n", toolsDir, set.Dir)
	tmp := set.Dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clean %s: %w", tmp, err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "stages"), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	fmt.Fprintf(out, "  downloading modules\n")
	for _, dir := range []string{toolsDir, filepath.Join(toolsDir, moduleDirs[MetricsServer])} {
		if _, err := goCmd(ctx, dir, "mod", "download"); err != nil {
			return err
		}
	}
	mods, err := modules(ctx, toolsDir, "k8s.io/kubernetes", "sigs.k8s.io/kwok", "go.etcd.io/etcd/server/v3")
	if err != nil {
		return err
	}
	k8s, kwok := mods["k8s.io/kubernetes"], mods["sigs.k8s.io/kwok"]
	for i, name := range Binaries {
		ldflags := ""
		switch name {
		case KubeAPIServer, KubeControllerManager, KubeScheduler:
			ldflags = versionLDFlags(k8s.Version)
		}
		if err := buildOne(ctx, toolsDir, tmp, name, ldflags, fmt.Sprintf("[%d/%d]", i+1, len(Binaries)), out); err != nil {
			return err
		}
	}
	for _, st := range KwokStages {
		b, err := os.ReadFile(filepath.Join(kwok.Dir, st))
		if err != nil {
			return fmt.Errorf("read kwok stage from module: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "stages", filepath.Base(st)), b, 0o644); err != nil {
			return fmt.Errorf("write kwok stage: %w", err)
		}
	}
	if err := os.RemoveAll(set.Dir); err != nil {
		return fmt.Errorf("replace %s: %w", set.Dir, err)
	}
	if err := os.Rename(tmp, set.Dir); err != nil {
		return fmt.Errorf("move build into place: %w", err)
	}
	fmt.Fprintf(out, "Built Kubernetes %s, etcd %s, kwok %s and metrics-server in %s\n",
		k8s.Version, mods["go.etcd.io/etcd/server/v3"].Version, kwok.Version, time.Since(start).Round(time.Second))
	return nil
}

// versionLDFlags stamps the Kubernetes version so that `kubectl version`
// reports it instead of v0.0.0-master.
func versionLDFlags(v string) string {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X "+pkg+".gitVersion="+v,
			"-X "+pkg+".gitMajor="+major,
			"-X "+pkg+".gitMinor="+minor,
			"-X "+pkg+".gitTreeState=clean",
			"-X "+pkg+".buildDate="+time.Now().UTC().Format("2006-01-02T15:04:05Z"),
		)
	}
	return strings.Join(flags, " ")
}

func buildOne(ctx context.Context, toolsDir, dir, name, ldflags, step string, out io.Writer) error {
	start := time.Now()
	fmt.Fprintf(out, "  %s building %s\n", step, name)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(out, "  %s still building %s (%s)\n", step, name, time.Since(start).Round(time.Second))
			}
		}
	}()
	args := []string{"build", "-o", filepath.Join(dir, name)}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	if _, err := goCmd(ctx, filepath.Join(toolsDir, moduleDirs[name]), append(args, mainPackages[name])...); err != nil {
		return err
	}
	fmt.Fprintf(out, "  %s built %s in %s\n", step, name, time.Since(start).Round(time.Second))
	return nil
}

func modules(ctx context.Context, toolsDir string, paths ...string) (map[string]moduleInfo, error) {
	b, err := goCmd(ctx, toolsDir, append([]string{"list", "-m", "-json"}, paths...)...)
	if err != nil {
		return nil, err
	}
	mods := map[string]moduleInfo{}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	for {
		var m moduleInfo
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("parse go list output: %w", err)
		}
		mods[m.Path] = m
	}
	for _, p := range paths {
		if mods[p].Dir == "" {
			return nil, fmt.Errorf("module %s not found in %s", p, toolsDir)
		}
	}
	return mods, nil
}

func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// The tools module has its own go.mod; a workspace would confuse it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return b, nil
}

func resolveToolsDir(dir string) (string, error) {
	if dir = firstNonEmpty(dir, os.Getenv(EnvToolsDir)); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return "", fmt.Errorf("tools module %s: %w", dir, err)
		}
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "tools", "go.mod")); err == nil {
			return filepath.Join(d, "hack", "tools"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("cannot find hack/tools/go.mod above %s: run from the flotilla repository, or set %s (source pins) or %s (prebuilt binaries)", wd, EnvToolsDir, EnvComponentsDir)
		}
	}
}

func resolveCacheDir(dir string) (string, error) {
	if dir = firstNonEmpty(dir, os.Getenv(EnvCacheDir)); dir != "" {
		return filepath.Abs(dir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find user cache directory (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(base, "flotilla", "components"), nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// canonical returns dir as an absolute path without symlinks; for a
// directory that does not exist yet, its deepest existing parent is
// resolved and the rest kept.
func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		resolved, err := filepath.EvalSymlinks(p)
		switch {
		case err == nil:
			return filepath.Join(resolved, rest), nil
		case !os.IsNotExist(err) || filepath.Dir(p) == p:
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}
