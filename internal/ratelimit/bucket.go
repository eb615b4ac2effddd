// Package ratelimit holds the token buckets of the failover brakes: how
// many member clusters may be tainted NoExecute per minute, and how many
// objects may leave one evicted cluster per minute. Time is passed in by
// the caller, so the buckets are pure and tests need no clock.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket: it holds at most Burst tokens and gains
// PerMinute tokens a minute. It starts full. A Bucket with PerMinute <= 0
// is unlimited. It is not safe for concurrent use (Keyed is).
type Bucket struct {
	perMinute float64
	burst     float64
	tokens    float64
	last      time.Time
}

// NewBucket returns a full bucket. A burst below 1 is raised to 1.
func NewBucket(perMinute float64, burst int) *Bucket {
	b := float64(max(burst, 1))
	return &Bucket{perMinute: perMinute, burst: b, tokens: b}
}

// Unlimited reports whether the bucket never runs out.
func (b *Bucket) Unlimited() bool { return b.perMinute <= 0 }

// refill adds the tokens earned since the last look. A clock that went
// backwards earns nothing.
func (b *Bucket) refill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Minutes()*b.perMinute)
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
}

// Wait is how long until a token is available at now (zero when one is).
func (b *Bucket) Wait(now time.Time) time.Duration {
	if b.Unlimited() {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	// Whole milliseconds, so that float rounding does not show, and never
	// "now" while empty.
	ms := math.Round((1 - b.tokens) / b.perMinute * float64(time.Minute/time.Millisecond))
	return max(time.Duration(ms)*time.Millisecond, time.Millisecond)
}

// Take takes a token at now if one is available.
func (b *Bucket) Take(now time.Time) bool {
	if b.Wait(now) > 0 {
		return false
	}
	if !b.Unlimited() {
		b.tokens--
	}
	return true
}

// Return gives back a token taken for something that did not happen (a
// write that failed), up to the burst.
func (b *Bucket) Return() {
	b.tokens = math.Min(b.burst, b.tokens+1)
}

// Keyed is one Bucket per key (a member cluster's name), made on first
// use, safe for concurrent use.
type Keyed struct {
	perMinute float64
	burst     int
	mu        sync.Mutex
	buckets   map[string]*Bucket
}

// NewKeyed returns buckets of perMinute tokens a minute and burst tokens
// at most (perMinute <= 0: unlimited).
func NewKeyed(perMinute float64, burst int) *Keyed {
	return &Keyed{perMinute: perMinute, burst: burst, buckets: map[string]*Bucket{}}
}

// Unlimited reports whether the buckets never run out.
func (k *Keyed) Unlimited() bool { return k == nil || k.perMinute <= 0 }

// TakeAll takes one token from the bucket of every key, or none: when a
// bucket is empty it returns false and the longest wait among them.
func (k *Keyed) TakeAll(keys []string, now time.Time) (bool, time.Duration) {
	if k.Unlimited() || len(keys) == 0 {
		return true, 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var wait time.Duration
	for _, key := range keys {
		wait = max(wait, k.bucket(key).Wait(now))
	}
	if wait > 0 {
		return false, wait
	}
	for _, key := range keys {
		k.bucket(key).Take(now)
	}
	return true, 0
}

// ReturnAll gives back one token to the bucket of every key (a decision
// that took them could not be written).
func (k *Keyed) ReturnAll(keys []string) {
	if k.Unlimited() {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		k.bucket(key).Return()
	}
}

func (k *Keyed) bucket(key string) *Bucket {
	b, ok := k.buckets[key]
	if !ok {
		b = NewBucket(k.perMinute, k.burst)
		k.buckets[key] = b
	}
	return b
}

// BurstFor is the burst the failover brakes use for a rate: ten seconds'
// worth of tokens, at least one.
func BurstFor(perMinute float64) int {
	return max(1, int(perMinute/6))
}
