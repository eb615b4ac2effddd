package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition parses the samples of a Prometheus text exposition,
// skipping comments and lines it cannot read.
func parseExposition(text string) []sample {
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if s, ok := parseSample(line); ok {
			out = append(out, s)
		}
	}
	return out
}

// parseSample parses `name{k="v",...} value [timestamp]`.
func parseSample(line string) (sample, bool) {
	s := sample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, false
	}
	s.name, line = line[:end], line[end:]
	if line[0] == '{' {
		rest, ok := parseLabels(line[1:], s.labels)
		if !ok {
			return s, false
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// parseLabels reads `k="v",...}` into labels and returns what follows the
// closing brace. Values may hold escaped quotes, backslashes and newlines.
func parseLabels(in string, labels map[string]string) (string, bool) {
	for {
		in = strings.TrimLeft(in, " ,")
		if strings.HasPrefix(in, "}") {
			return in[1:], true
		}
		eq := strings.Index(in, `="`)
		if eq <= 0 {
			return "", false
		}
		name := in[:eq]
		in = in[eq+2:]
		var v strings.Builder
		closed := false
		for i := 0; i < len(in); i++ {
			c := in[i]
			if c == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(in[i])
				}
				continue
			}
			if c == '"' {
				in, closed = in[i+1:], true
				break
			}
			v.WriteByte(c)
		}
		if !closed {
			return "", false
		}
		labels[name] = v.String()
	}
}

// sum adds the values of the samples named name whose labels keep accepts
// (all when keep is nil), and reports whether any was found.
func sum(samples []sample, name string, keep func(labels map[string]string) bool) (float64, bool) {
	var total float64
	found := false
	for _, s := range samples {
		if s.name == name && (keep == nil || keep(s.labels)) {
			total += s.value
			found = true
		}
	}
	return total, found
}

// httpClient fetches the metrics of the environment's plain-HTTP endpoints
// (controller-manager, etcd) on loopback.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// fetchMetrics reads a plain-HTTP Prometheus endpoint.
func fetchMetrics(ctx context.Context, url string) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return parseExposition(string(b)), nil
}
