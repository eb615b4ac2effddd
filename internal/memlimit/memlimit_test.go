package memlimit

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupLimit(t *testing.T) {
	tests := []struct {
		name   string
		proc   string
		files  map[string]string
		want   int64
		hasErr bool
	}{
		{name: "v2 own cgroup", proc: "0::/kubepods/pod1/c1\n", files: map[string]string{"kubepods/pod1/c1/memory.max": "1073741824\n"}, want: 1 << 30},
		{name: "v2 unlimited", proc: "0::/user.slice\n", files: map[string]string{"user.slice/memory.max": "max\n"}},
		{name: "v2 container root", proc: "0::/\n", files: map[string]string{"memory.max": "536870912\n"}, want: 512 << 20},
		{name: "v1 memory controller", proc: "4:memory:/process_api/abc\n3:cpuset:/\n", files: map[string]string{"memory/process_api/abc/memory.limit_in_bytes": "2147483648\n"}, want: 2 << 30},
		{name: "v1 joint controllers", proc: "5:cpu,memory:/x\n", files: map[string]string{"memory/x/memory.limit_in_bytes": "4096\n"}, want: 4096},
		{name: "v1 unlimited", proc: "4:memory:/\n", files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		{name: "no cgroup fs", proc: "0::/x\n"},
		{name: "garbage", proc: "0::/x\n", files: map[string]string{"x/memory.max": "lots\n"}, hasErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "cgroup")
			proc := filepath.Join(dir, "proc-cgroup")
			write(t, proc, tc.proc)
			for p, c := range tc.files {
				write(t, filepath.Join(root, p), c)
			}
			got, err := CgroupLimit(root, proc)
			if (err != nil) != tc.hasErr || got != tc.want {
				t.Errorf("CgroupLimit = %d, %v; want %d (error %v)", got, err, tc.want, tc.hasErr)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		env      string
		explicit int64
		cgroup   int64
		want     Decision
	}{
		{name: "nothing", want: Decision{Source: "none"}},
		{name: "cgroup", cgroup: 1000, want: Decision{Limit: 900, Source: "cgroup"}},
		{name: "flag wins over cgroup", explicit: 500, cgroup: 1000, want: Decision{Limit: 500, Source: "flag"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.env, tc.explicit, DefaultFraction, tc.cgroup); got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := Decide("1GiB", 500, DefaultFraction, 1000); got.Source != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT set: %+v, want the environment to win", got)
	}
}
