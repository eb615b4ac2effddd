package localenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a component started by this process.
type process struct {
	state ComponentState
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process exits
	err   error         // exit error, valid after done
}

// startProcess starts a component with its output appended to its log file.
// Detached processes get their own session and outlive the caller; the others
// are killed by the kernel when the caller dies, so a crashed test leaves
// nothing behind.
func startProcess(c ComponentState, args []string, detach bool) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(c.Log), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	logFile, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", c.Log, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "==> %s %s %s\n", time.Now().Format(time.RFC3339), c.Binary, strings.Join(args, " "))
	cmd := exec.Command(c.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = filepath.Dir(c.Log)
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	p := &process{state: c, cmd: cmd, done: make(chan struct{})}
	p.state.PID = cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited, with a description that
// points at the end of its log.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); last log lines of %s:\n%s", p.state.Name, p.err, p.state.Log, tail(p.state.Log, 8))
	default:
		return nil
	}
}

// alive reports whether pid is a running process executing binary. Checking
// the executable guards against acting on a recycled pid.
func alive(pid int, binary string) bool {
	if pid <= 0 {
		return false
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return false
	}
	if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
		// A zombie has exited; it only waits for its parent to reap it.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return sameExecutable(exe, binary)
}

// sameExecutable reports whether exe, a /proc/PID/exe link, is binary:
// the link names the file itself (binary may be a symlink to it) and
// " (deleted)" once the file was replaced.
func sameExecutable(exe, binary string) bool {
	exe = strings.TrimSuffix(exe, " (deleted)")
	if exe == binary {
		return true
	}
	resolved, err := filepath.EvalSymlinks(binary)
	return err == nil && exe == resolved
}

// exited reports whether pid, a process of binary that was signalled, is
// gone: no such process, a zombie, or a pid now recycled for another
// executable. Unlike alive, an executable that cannot be read means the
// process is still exiting (the kernel drops it from /proc/PID/exe before
// the last of its threads is gone), not that it has.
func exited(pid int, binary string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return true
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	return err == nil && !sameExecutable(exe, binary)
}

// stopPID sends SIGTERM, waits up to grace for the process to go, then
// sends SIGKILL and waits again.
func stopPID(pid int, binary string, grace time.Duration) error {
	if !alive(pid, binary) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if waitGone(pid, binary, grace) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitGone(pid, binary, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("process %d (%s) did not exit after SIGKILL", pid, filepath.Base(binary))
}

func waitGone(pid int, binary string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if exited(pid, binary) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			l = l[:300] + "..."
		}
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}
