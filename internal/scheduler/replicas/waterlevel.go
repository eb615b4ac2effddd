package replicas

import "math"

// DefaultWaterLevelCap is the cap on a cluster's dynamic weight relative to
// its share of total capacity (the 1.4 chosen by the seed's SRE team).
const DefaultWaterLevelCap = 1.4

// Capacity is what a cluster has for the water-level weights.
type Capacity struct {
	// Total is the cluster's allocatable amount (T_i).
	Total float64
	// Available is what is still free (A_i); negative counts as zero.
	Available float64
}

// WaterLevel returns each cluster's weight by its water level:
// R_i = min(A_i/ΣA, cap·T_i/ΣT), normalised to sum to 1. A cluster with
// much free room gets more replicas, but never more than cap times its
// share of total capacity, so an empty small cluster is not flooded. When
// nothing is available or nothing is allocatable the weights are even. A
// cap of zero or less uses DefaultWaterLevelCap.
func WaterLevel(clusters []Capacity, cap float64) []float64 {
	n := len(clusters)
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	if cap <= 0 {
		cap = DefaultWaterLevelCap
	}
	var sumA, sumT float64
	for _, c := range clusters {
		sumA += math.Max(c.Available, 0)
		sumT += math.Max(c.Total, 0)
	}
	if sumA <= 0 || sumT <= 0 {
		for i := range out {
			out[i] = 1 / float64(n)
		}
		return out
	}
	var sumR float64
	for i, c := range clusters {
		out[i] = math.Min(math.Max(c.Available, 0)/sumA, cap*math.Max(c.Total, 0)/sumT)
		sumR += out[i]
	}
	if !(sumR > 0) { // every weight capped to zero (room only where nothing is allocatable), or NaN
		for i := range out {
			out[i] = 1 / float64(n)
		}
		return out
	}
	for i := range out {
		out[i] /= sumR
	}
	return out
}
