package replicas

// AvoidDisruption turns a desired plan into one reachable without moving
// running replicas because weights changed. current and desired are counts
// per cluster in the same order; the result sums to desired's total:
//   - same total: keep current;
//   - scale down: only clusters above their desired count shrink, in
//     proportion to how far above they are;
//   - scale up: only clusters below their desired count grow, in proportion
//     to how far below they are.
//
// So replicas never start in one cluster while stopping in another. Ties
// are broken by a hash of seed and the cluster names.
func AvoidDisruption(current, desired []int64, names []string, seed string) []int64 {
	out := make([]int64, len(current))
	copy(out, current)
	var cur, want int64
	for i := range current {
		cur += current[i]
		want += desired[i]
	}
	if cur == want {
		return out
	}
	gap := make([]Target, len(current))
	for i := range current {
		var d int64
		if want < cur {
			d = current[i] - desired[i] // excess
		} else {
			d = desired[i] - current[i] // deficit
		}
		d = max(d, 0)
		gap[i] = Target{Name: names[i], Weight: float64(d), Max: d}
	}
	diff := want - cur
	if diff < 0 {
		diff = -diff
	}
	moves := Split(diff, gap, seed)
	for i, m := range moves {
		if want < cur {
			out[i] -= m
		} else {
			out[i] += m
		}
	}
	return out
}
