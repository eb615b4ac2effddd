package replicas

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bisectWaterFill is the obvious reference for waterFill: bisection on λ.
func bisectWaterFill(total float64, w []float64, lo, hi []int64) []float64 {
	share := func(i int, lambda float64) float64 {
		v := float64(lo[i])
		if w[i] > 0 {
			v = math.Max(lambda*w[i], v)
		}
		if hi[i] >= 0 {
			v = math.Min(v, float64(hi[i]))
		}
		return v
	}
	sumAt := func(lambda float64) float64 {
		s := 0.0
		for i := range w {
			s += share(i, lambda)
		}
		return s
	}
	loL, hiL := 0.0, 1.0
	for range 2000 {
		if sumAt(hiL) >= total {
			break
		}
		hiL *= 2
	}
	for range 200 {
		mid := (loL + hiL) / 2
		if sumAt(mid) < total {
			loL = mid
		} else {
			hiL = mid
		}
	}
	x := make([]float64, len(w))
	for i := range w {
		x[i] = share(i, hiL)
	}
	return x
}

func TestWaterFillMatchesBisection(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		k := 1 + r.IntN(12)
		w := make([]float64, k)
		lo := make([]int64, k)
		hi := make([]int64, k)
		var sumLo int64
		for i := range k {
			if r.IntN(5) > 0 {
				w[i] = r.Float64() * 10
			}
			lo[i] = int64(r.IntN(4))
			sumLo += lo[i]
			hi[i] = NoMax
			if r.IntN(3) == 0 {
				hi[i] = lo[i] + int64(r.IntN(6))
			}
		}
		if w[0] == 0 {
			w[0] = 1 // Split guarantees some positive weight
		}
		total := float64(sumLo + 1 + int64(r.IntN(40)))
		got := waterFill(total, w, lo, hi)
		want := bisectWaterFill(total, w, lo, hi)
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				t.Fatalf("case %d: total %v w %v lo %v hi %v: got %v, want %v", n, total, w, lo, hi, got, want)
			}
		}
	}
}
