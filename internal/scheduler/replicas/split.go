package replicas

import (
	"hash/fnv"
	"math"
	"slices"
	"sort"
)

// Target is one cluster a workload's replicas may go to.
type Target struct {
	// Name is the cluster's name.
	Name string
	// Weight is the cluster's relative share (negative counts as zero).
	// When every weight is zero, all targets weigh the same.
	Weight float64
	// Min is the fewest replicas the cluster gets (when the total allows).
	Min int64
	// Max is the most replicas the cluster gets; negative means no limit.
	Max int64
}

// NoMax is the Max of a target without an upper limit.
const NoMax = -1

// Split divides total replicas among targets in proportion to their
// weights, within each target's [Min, Max], and returns the count per
// target in the order given. Shares are computed exactly (water-filling
// over the bounds), then rounded by largest remainder; equal remainders go
// to the target ranked first by a hash of seed and name. When the minimums
// exceed total they are met as far as total allows, the heaviest weight
// first, then in that rank order; when the maximums cannot hold total, the
// result sums to less than total.
func Split(total int64, targets []Target, seed string) []int64 {
	n := len(targets)
	out := make([]int64, n)
	if n == 0 || total <= 0 {
		return out
	}
	rank := hashRank(targets, seed)
	w := weights(targets)
	lo, hi := bounds(targets)

	var sumMin int64
	for i := range targets {
		sumMin += lo[i]
	}
	if sumMin >= total {
		// Not even the minimums fit: fill them by weight, the heaviest
		// first, then in rank order.
		byWeight := slices.Clone(rank)
		sort.SliceStable(byWeight, func(a, b int) bool { return w[byWeight[a]] > w[byWeight[b]] })
		left := total
		for _, i := range byWeight {
			out[i] = min(lo[i], left)
			left -= out[i]
		}
		return out
	}

	share := waterFill(float64(total), w, lo, hi)
	var assigned int64
	frac := make([]float64, n)
	for i := range targets {
		out[i] = int64(math.Floor(share[i] + 1e-9))
		out[i] = max(out[i], lo[i])
		if hi[i] >= 0 {
			out[i] = min(out[i], hi[i])
		}
		frac[i] = share[i] - float64(out[i])
		assigned += out[i]
	}
	// Hand out the remaining units by largest remainder, then rank.
	order := make([]int, n)
	copy(order, rank)
	pos := make([]int, n)
	for p, i := range rank {
		pos[i] = p
	}
	sort.SliceStable(order, func(a, b int) bool {
		fa, fb := frac[order[a]], frac[order[b]]
		if math.Abs(fa-fb) > 1e-9 {
			return fa > fb
		}
		return pos[order[a]] < pos[order[b]]
	})
	for left := total - assigned; left > 0; {
		progressed := false
		for _, i := range order {
			if left == 0 {
				break
			}
			if w[i] == 0 || (hi[i] >= 0 && out[i] >= hi[i]) {
				continue // a zero weight gets no share beyond its minimum
			}
			out[i]++
			left--
			progressed = true
		}
		if !progressed {
			break // every target is at its maximum
		}
	}
	return out
}

// waterFill finds shares x_i = clamp(λ·w_i, lo_i, hi_i) summing to total
// (or every x_i = hi_i when the maximums cannot hold it). The sum is
// piecewise linear in λ with a kink where a share leaves its minimum or
// reaches its maximum, so it walks the sorted kinks to the segment that
// reaches total and solves that segment exactly: O(n log n).
func waterFill(total float64, w []float64, lo, hi []int64) []float64 {
	type kink struct {
		lambda float64
		slope  float64 // change of the sum's slope at lambda
	}
	kinks := make([]kink, 0, 2*len(w))
	sum := 0.0
	for i := range w {
		sum += float64(lo[i])
		if w[i] <= 0 {
			continue
		}
		kinks = append(kinks, kink{float64(lo[i]) / w[i], w[i]})
		if hi[i] >= 0 {
			kinks = append(kinks, kink{float64(hi[i]) / w[i], -w[i]})
		}
	}
	// Ordered by λ, then slope, so that the walk does not depend on the
	// targets' order.
	sort.Slice(kinks, func(a, b int) bool {
		if kinks[a].lambda != kinks[b].lambda {
			return kinks[a].lambda < kinks[b].lambda
		}
		return kinks[a].slope < kinks[b].slope
	})
	lambda := math.Inf(1)
	var slope compensated // weights of very different sizes come and go
	at := 0.0
	for _, k := range kinks {
		if s := slope.value(); s > 0 && sum+s*(k.lambda-at) >= total {
			lambda = at + (total-sum)/s
			break
		} else {
			sum += s * (k.lambda - at)
		}
		at = k.lambda
		slope.add(k.slope)
	}
	if s := slope.value(); math.IsInf(lambda, 1) && s > 1e-12 {
		lambda = at + (total-sum)/s
	}
	x := make([]float64, len(w))
	for i := range w {
		v := float64(lo[i])
		if w[i] > 0 {
			v = math.Max(lambda*w[i], v)
		}
		if hi[i] >= 0 {
			v = math.Min(v, float64(hi[i]))
		}
		x[i] = v
	}
	return x
}

// compensated is a float64 sum that keeps the low-order bits each
// addition loses (Neumaier), so that adding a large weight, a small one
// and taking the large one away again leaves the small one, not rounding
// noise.
type compensated struct{ sum, lost float64 }

func (c *compensated) add(x float64) {
	t := c.sum + x
	if math.Abs(c.sum) >= math.Abs(x) {
		c.lost += (c.sum - t) + x
	} else {
		c.lost += (x - t) + c.sum
	}
	c.sum = t
}

func (c *compensated) value() float64 { return c.sum + c.lost }

func weights(targets []Target) []float64 {
	w := make([]float64, len(targets))
	var sum float64
	for i, t := range targets {
		w[i] = math.Max(t.Weight, 0)
		sum += w[i]
	}
	if sum == 0 {
		for i := range w {
			w[i] = 1
		}
	}
	return w
}

func bounds(targets []Target) (lo, hi []int64) {
	lo, hi = make([]int64, len(targets)), make([]int64, len(targets))
	for i, t := range targets {
		lo[i] = max(t.Min, 0)
		hi[i] = t.Max
		if hi[i] >= 0 && hi[i] < lo[i] {
			hi[i] = lo[i]
		}
	}
	return lo, hi
}

// hashRank orders target indices by a hash of seed and name (then name),
// the tie-break that keeps plans stable without favouring names that sort
// first.
func hashRank(targets []Target, seed string) []int {
	h := make([]uint64, len(targets))
	for i, t := range targets {
		f := fnv.New64a()
		f.Write([]byte(seed))
		f.Write([]byte{0})
		f.Write([]byte(t.Name))
		h[i] = f.Sum64()
	}
	idx := make([]int, len(targets))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if h[idx[a]] != h[idx[b]] {
			return h[idx[a]] < h[idx[b]]
		}
		return targets[idx[a]].Name < targets[idx[b]].Name
	})
	return idx
}
