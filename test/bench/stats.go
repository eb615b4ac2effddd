package main

import (
	"math"
	"slices"
	"time"
)

// summary describes a set of durations, in seconds.
type summary struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// summarize computes a summary of ds; an empty input gives a zero summary.
func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := make([]float64, len(ds))
	var sum float64
	for i, d := range ds {
		s[i] = d.Seconds()
		sum += s[i]
	}
	slices.Sort(s)
	return summary{
		Count: len(s),
		Min:   s[0],
		Mean:  sum / float64(len(s)),
		P50:   percentile(s, 50),
		P95:   percentile(s, 95),
		P99:   percentile(s, 99),
		Max:   s[len(s)-1],
	}
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted values
// by the nearest-rank method: the smallest value that at least p percent
// of the values are less than or equal to. It is always one of the
// values; an empty input gives 0.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// rate is n events per second over d; 0 when d is not positive.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
