package localenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/flotilla-io/flotilla/internal/components"
)

// kwok serves what a kubelet serves for pods (logs, exec, port-forward)
// so that `kubectl logs`, `kubectl exec` and `kubectl port-forward` work
// end to end on the fake pods of a full member, directly or through the
// gateway:
//
//   - logs: every container's log is the member's container.log file
//     (two lines written at start, in the CRI log format; -f follows it);
//   - exec: the command runs on this machine, in the temporary directory,
//     with FLOTILLA_MEMBER set to the member's name, as nobody when the
//     environment runs as root;
//   - port-forward: every port is an echo service (cat), so that bytes sent
//     through a forwarded port come back.
//
// The member's kube-apiserver reaches kwok as a kubelet at 127.0.0.1 (kwok
// sets the nodes' InternalIP and kubelet port) over TLS.

func (p paths) kwokDir() string         { return filepath.Join(p.dir(), "kwok") }
func (p paths) kwokDebugConfig() string { return filepath.Join(p.kwokDir(), "debugging.yaml") }

// ContainerLogFile is the file the fake containers of a member's pods log
// (kubectl logs shows it).
func ContainerLogFile(stateDir, member string) string {
	return filepath.Join(paths{stateDir: stateDir, name: member}.kwokDir(), "container.log")
}

func (p clusterPlan) runsKwok() bool { return slices.Contains(p.componentNames(), components.Kwok) }

// prepareKwok writes kwok's serving certificate, its debugging
// configuration and the containers' log.
func (p clusterPlan) prepareKwok(ca *authority) error {
	if !p.runsKwok() {
		return nil
	}
	cert, key, err := ca.issueServing("kwok-" + p.name)
	if err != nil {
		return err
	}
	security := ""
	if os.Geteuid() == 0 {
		security = "\n      securityContext: {runAsUser: 65534, runAsGroup: 65534}"
	}
	logFile := ContainerLogFile(p.stateDir, p.name)
	config := fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: flotilla-logs
spec:
  logs:
  - logsFile: %q
    previousLogsFile: %q
    follow: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: flotilla-exec
spec:
  execs:
  - local:
      workDir: %q
      envs:
      - {name: FLOTILLA_MEMBER, value: %q}%s
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: flotilla-port-forward
spec:
  forwards:
  - command: ["cat"]
`, logFile, logFile, os.TempDir(), p.name, security)
	// The CRI log format a kubelet reads: time, stream, tag, text.
	now := time.Now().UTC().Format(time.RFC3339Nano)
	lines := fmt.Sprintf("%s stdout F fake container of member %s: started\n%s stdout F fake container of member %s: serving\n", now, p.name, now, p.name)
	return writeFiles(map[string][]byte{
		p.pki("kwok.crt"):   cert,
		p.pki("kwok.key"):   key,
		p.kwokDebugConfig(): []byte(config),
		logFile:             []byte(lines),
	})
}
