package fgd

import (
	"math"
	"strconv"
)

// MaxArrived is the last arrived-workload percentage a Curve has a point
// for (FGD's tune of 1.3 stops at 130%).
const MaxArrived = 130

// Curve holds a run's metrics against arrived workload, one point per whole
// percent of cluster GPU capacity (index k = k% arrived), as the FGD merge
// scripts compute them (experiments/analysis/merge_*_discrete.py): every
// pod event whose arrived share rounds to k is averaged; where none does,
// the events within k-1..k+1 are. Points without data are NaN.
type Curve struct {
	// Alloc is the GPU allocation %: allocated GPU milli over capacity.
	// Unallocated GPU % is 100 - Alloc.
	Alloc [MaxArrived + 1]float64
	// FragAmount is the fragmented GPU milli as a % of all GPUs.
	FragAmount [MaxArrived + 1]float64
	// FragRatio is the fragmented GPU milli as a % of idle GPU milli.
	FragRatio [MaxArrived + 1]float64
}

// Unallocated returns 100 - Alloc[k].
func (c *Curve) Unallocated(k int) float64 { return 100 - c.Alloc[k] }

// recorder keeps the per-event values of each bucket: the merge scripts
// average them with pandas, whose sum (numpy's pairwise summation) rounds
// differently from a running sum, and a mean that lands on x.xx5 rounds
// to either side depending on it.
type recorder struct {
	gpus    int64 // GPUs in the cluster
	buckets []bucket
}

type bucket struct {
	alloc, fragMilli, fragRate []float64
}

func newRecorder(gpus int) *recorder {
	return &recorder{gpus: int64(gpus), buckets: make([]bucket, MaxArrived+2)}
}

// add records one pod event. The FGD simulator logs the frag amount and
// rate with two decimals and the merge script rounds the allocation % to
// two decimals before averaging; so does this.
func (r *recorder) add(arrivedMilli, usedMilli int64, fragMilli, idleMilli float64) {
	k := int(math.RoundToEven(float64(arrivedMilli) / float64(r.gpus) / 10))
	if k < 0 || k >= len(r.buckets) {
		return
	}
	b := &r.buckets[k]
	b.alloc = append(b.alloc, round2(float64(usedMilli)/float64(r.gpus)/10))
	b.fragMilli = append(b.fragMilli, round2(fragMilli))
	rate := 0.0
	if idleMilli > 0 {
		rate = round2(100 * fragMilli / idleMilli)
	}
	b.fragRate = append(b.fragRate, rate)
}

// curve finishes the averages.
func (r *recorder) curve() Curve {
	var c Curve
	for k := 0; k <= MaxArrived; k++ {
		b := r.buckets[k]
		if len(b.alloc) == 0 && k > 0 { // events of k-1, then of k+1
			b = bucket{
				alloc:     append(append([]float64(nil), r.buckets[k-1].alloc...), r.buckets[k+1].alloc...),
				fragMilli: append(append([]float64(nil), r.buckets[k-1].fragMilli...), r.buckets[k+1].fragMilli...),
				fragRate:  append(append([]float64(nil), r.buckets[k-1].fragRate...), r.buckets[k+1].fragRate...),
			}
		} else if len(b.alloc) == 0 {
			b = r.buckets[k+1]
		}
		if len(b.alloc) == 0 {
			c.Alloc[k], c.FragAmount[k], c.FragRatio[k] = math.NaN(), math.NaN(), math.NaN()
			continue
		}
		c.Alloc[k] = npRound2(mean(b.alloc))
		c.FragAmount[k] = npRound2(100 * mean(b.fragMilli) / 1000 / float64(r.gpus))
		c.FragRatio[k] = mean(b.fragRate)
	}
	return c
}

// mean is pandas' Series.mean: numpy's pairwise sum over the count.
func mean(xs []float64) float64 { return pairwiseSum(xs) / float64(len(xs)) }

// pairwiseSum is numpy's pairwise_sum for float64: below 8 values a running
// sum; up to 128, eight interleaved running sums combined as a tree, then
// the rest; above, the two halves (cut at a multiple of 8) recursively.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, x := range a {
			res += x
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	}
	n2 := n / 2
	n2 -= n2 % 8
	return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
}

// npRound2 is round(x, 2) on a numpy float (what pandas' mean returns):
// numpy scales, rounds half to even and scales back, which is not always
// the nearest two-decimal number.
func npRound2(x float64) float64 { return math.RoundToEven(x*100) / 100 }

// round2 rounds to two decimals the way Python's round(x, 2) does on a
// Python float (pandas' apply and the simulator's "%.2f" logs): to the
// nearest decimal of the exact binary value.
func round2(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return v
}
