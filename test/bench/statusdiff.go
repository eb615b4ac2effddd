package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deploymentStatuses returns the JSON of every host Deployment's status
// in the benchmark namespace, by name, to compare before and after a
// restart.
func (b *bench) deploymentStatuses(ctx context.Context) (map[string]string, error) {
	list, err := b.host.AppsV1().Deployments(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list host Deployments: %w", err)
	}
	out := make(map[string]string, len(list.Items))
	for _, d := range list.Items {
		raw, err := json.Marshal(d.Status)
		if err != nil {
			return nil, err
		}
		out[d.Name] = string(raw)
	}
	return out, nil
}

// statusChanges returns how many statuses differ between before and after
// and up to max examples, each the name with both statuses.
func statusChanges(before, after map[string]string, max int) (int, []string) {
	var names []string
	for name, a := range after {
		if before[name] != a {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var examples []string
	for _, name := range names[:min(max, len(names))] {
		examples = append(examples, fmt.Sprintf("%s: before %s after %s", name, before[name], after[name]))
	}
	return len(names), examples
}
