package localenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestExited: a running process of the binary has not exited; a pid that
// now runs another executable, a zombie and a reaped process have.
func TestExited(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if exited(pid, bin) {
		t.Errorf("a running %s has exited", bin)
	}
	if !exited(os.Getpid(), exe+".other") {
		t.Errorf("a pid running another executable has not exited")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped: a zombie.
	deadline := time.Now().Add(10 * time.Second)
	for !exited(pid, bin) {
		if time.Now().After(deadline) {
			t.Fatalf("killed process %d not seen as exited", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	_ = cmd.Wait()
	if !exited(pid, bin) {
		t.Errorf("a reaped process has not exited")
	}
}

// TestAliveThroughASymlink: a process started through a symlink (a
// components directory under a symlinked home, or a folder of links) is
// known by its recorded path, although /proc names the link's target.
func TestAliveThroughASymlink(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	target, err := filepath.EvalSymlinks(sleep)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "etcd")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !alive(cmd.Process.Pid, link) {
		t.Errorf("process %d started as %s is not seen alive", cmd.Process.Pid, link)
	}
	if alive(cmd.Process.Pid, link+".other") {
		t.Errorf("process %d seen alive as another binary", cmd.Process.Pid)
	}
	if exited(cmd.Process.Pid, link) {
		t.Errorf("process %d started as %s seen exited", cmd.Process.Pid, link)
	}
}
