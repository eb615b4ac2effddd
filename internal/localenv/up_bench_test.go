package localenv_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// BenchmarkUp starts the default environment (host + 3 full members, 3 nodes
// each) with the components already built, and reports the time to ready and
// the resident memory of every component once ready.
func BenchmarkUp(b *testing.B) {
	if testing.Short() {
		b.Skip("starts environments")
	}
	set, err := components.Ensure(context.Background(), components.Options{Out: os.Stderr})
	if err != nil {
		b.Fatal(err)
	}
	var readyTotal time.Duration
	rss := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		opts := localenv.DefaultOptions()
		opts.StateDir = b.TempDir()
		start := time.Now()
		env, err := localenv.Up(context.Background(), set, opts)
		if err != nil {
			b.Fatal(err)
		}
		readyTotal += time.Since(start)
		for _, c := range env.State.Clusters {
			for _, comp := range c.Components {
				mib, err := rssMiB(comp.PID)
				if err != nil {
					b.Fatalf("%s %s: %v", c.Name, comp.Name, err)
				}
				rss[comp.Name] = append(rss[comp.Name], mib)
			}
		}
		if err := env.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(readyTotal.Seconds()/float64(b.N), "s-to-ready")
	var total float64
	names := make([]string, 0, len(rss))
	for name := range rss {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var sum, most float64
		for _, v := range rss[name] {
			sum += v
			most = max(most, v)
		}
		total += sum
		b.ReportMetric(most, name+"-max-MiB")
	}
	b.ReportMetric(total/float64(b.N), "total-rss-MiB")
}

func rssMiB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
