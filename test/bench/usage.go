package main

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// usage is the resource use the memory scenario reports.
type usage struct {
	// RSSKiB and HWMKiB are the controller-manager's VmRSS and VmHWM.
	RSSKiB int64 `json:"rssKiB"`
	HWMKiB int64 `json:"hwmKiB"`
	// EtcdBytes is the host etcd's database size and EtcdInUseBytes the
	// part of it in use (-1 when etcd's metrics were not readable and
	// EtcdBytes is the size of its data directory instead).
	EtcdBytes      int64 `json:"etcdBytes"`
	EtcdInUseBytes int64 `json:"etcdInUseBytes"`
}

// measureUsage reads the controller-manager's memory and the host etcd's
// size.
func (b *bench) measureUsage(ctx context.Context) (usage, error) {
	st, err := b.state()
	if err != nil {
		return usage{}, err
	}
	cm, err := component(st, localenv.HostName, localenv.ControllerManager)
	if err != nil {
		return usage{}, err
	}
	var u usage
	if u.RSSKiB, u.HWMKiB, err = procMemory(cm.PID); err != nil {
		return usage{}, err
	}
	etcd, err := component(st, localenv.HostName, components.Etcd)
	if err != nil {
		return usage{}, err
	}
	u.EtcdBytes, u.EtcdInUseBytes, err = etcdSize(ctx, etcd)
	return u, err
}

// procMemory reads VmRSS and VmHWM (KiB) of a process.
func procMemory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			rss, err = strconv.ParseInt(fields[1], 10, 64)
		case "VmHWM:":
			hwm, err = strconv.ParseInt(fields[1], 10, 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("memory of pid %d: %w", pid, err)
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("memory of pid %d: no VmRSS/VmHWM in /proc/%d/status", pid, pid)
	}
	return rss, hwm, s.Err()
}

// etcdSize reads the database size from etcd's /metrics on its client
// port or, failing that, sums the files of its data directory (inUse is
// then -1).
func etcdSize(ctx context.Context, etcd localenv.ComponentState) (total, inUse int64, err error) {
	samples, merr := fetchMetrics(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", etcd.Port))
	if merr == nil {
		t, ok1 := sum(samples, "etcd_mvcc_db_total_size_in_bytes", nil)
		u, ok2 := sum(samples, "etcd_mvcc_db_total_size_in_use_in_bytes", nil)
		if ok1 && ok2 {
			return int64(t), int64(u), nil
		}
	}
	dir := ""
	for _, a := range etcd.Args {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			dir = v
		}
	}
	if dir == "" {
		return 0, 0, fmt.Errorf("host etcd size: metrics unreadable (%v) and no --data-dir recorded", merr)
	}
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("host etcd size: %w", err)
	}
	return total, -1, nil
}

// writeVerbs and writeResources select the member write requests the
// restart scenario counts: creates, updates, patches, applies and deletes
// of the kinds the benchmark propagates, and of namespaces (not of their
// status).
var (
	writeVerbs     = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true}
	writeResources = map[string]bool{"deployments": true, "configmaps": true, "namespaces": true}
)

// memberWrites reads every member's apiserver_request_total and returns,
// per member, the write requests writeVerbs/writeResources select.
func (b *bench) memberWrites(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, m := range b.members {
		raw, err := m.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", m.name, err)
		}
		n, _ := sum(parseExposition(string(raw)), "apiserver_request_total", func(l map[string]string) bool {
			return writeVerbs[l["verb"]] && writeResources[l["resource"]] && l["subresource"] == ""
		})
		out[m.name] = int(n)
	}
	return out, nil
}

// hostWriteResources are the host resources whose writes (status
// included) the restart scenario counts: what the controllers keep. Leases
// (leader election) are left out, events are counted apart.
var hostWriteResources = map[string]bool{
	"deployments": true, "configmaps": true, "namespaces": true,
	"federatedobjects": true, "memberclusters": true, "clusterintents": true,
}

// hostWrites reads the host apiserver's apiserver_request_total and returns
// the write requests on hostWriteResources (status included) by "VERB
// resource[/subresource]", and the writes of events.
func (b *bench) hostWrites(ctx context.Context) (objects map[string]int, events int, err error) {
	raw, err := b.host.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("metrics of the host: %w", err)
	}
	objects = map[string]int{}
	for _, smp := range parseExposition(string(raw)) {
		l := smp.labels
		if smp.name != "apiserver_request_total" || !writeVerbs[l["verb"]] {
			continue
		}
		switch {
		case hostWriteResources[l["resource"]]:
			what := l["verb"] + " " + l["resource"]
			if sub := l["subresource"]; sub != "" {
				what += "/" + sub
			}
			objects[what] += int(smp.value)
		case l["resource"] == "events":
			events += int(smp.value)
		}
	}
	return objects, events, nil
}

// writesSince returns the counts of after that grew since before, and
// their total.
func writesSince(before, after map[string]int) (map[string]int, int) {
	out, total := map[string]int{}, 0
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
			total += d
		}
	}
	return out, total
}
