package localenv

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/components"
)

// AnnotationPodReadyDelay, on a pod of a full member, delays its Ready
// condition by a Go duration ("3s"). It is the annotation kwok's own
// general stages read; the environment's fast pod-ready stage is given
// the same delay, so that a workload's pod template can make a rollout
// take observable time. Pods without it are Ready at once.
const AnnotationPodReadyDelay = "pod-ready.stage.kwok.x-k8s.io/delay"

// podReadyStage is the stage file whose delay the environment sets.
const podReadyStage = "pod-ready.yaml"

func (p paths) kwokPodReadyStage() string { return filepath.Join(p.kwokDir(), podReadyStage) }

// kwokStageFiles are the stage files kwok runs with: the set's, with its
// pod-ready stage replaced by the member's copy that honours
// AnnotationPodReadyDelay (writeStages).
func (p clusterPlan) kwokStageFiles(set components.Set) []string {
	files := set.StageFiles()
	for i, f := range files {
		if filepath.Base(f) == podReadyStage {
			files[i] = p.kwokPodReadyStage()
		}
	}
	return files
}

// writeStages writes the member's pod-ready stage: the set's, with a
// delay taken from AnnotationPodReadyDelay (none without it).
func (p clusterPlan) writeStages(set components.Set) error {
	if !p.runsKwok() {
		return nil
	}
	src := filepath.Join(set.Dir, "stages", podReadyStage)
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read kwok stage: %w", err)
	}
	out, err := withReadyDelay(b)
	if err != nil {
		return fmt.Errorf("kwok stage %s: %w", src, err)
	}
	if err := os.MkdirAll(p.kwokDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p.kwokPodReadyStage(), out, 0o644)
}

// withReadyDelay returns the stage with spec.delay read from
// AnnotationPodReadyDelay (0 when the pod has none).
func withReadyDelay(stage []byte) ([]byte, error) {
	var st map[string]any
	if err := yaml.Unmarshal(stage, &st); err != nil {
		return nil, err
	}
	spec, ok := st["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no spec")
	}
	spec["delay"] = map[string]any{
		"durationMilliseconds": 0,
		"durationFrom":         map[string]any{"expressionFrom": fmt.Sprintf(".metadata.annotations[%q]", AnnotationPodReadyDelay)},
	}
	return yaml.Marshal(st)
}
