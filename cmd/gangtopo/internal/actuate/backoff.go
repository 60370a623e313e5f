package actuate

import "time"

// backoff remembers the changes that failed, by key (action and job), so
// that the same harm is not tried again every cycle: after the n-th
// failure in a row a key waits base x 2^(n-1), at most max. A success
// forgets the key. Keys whose wait ended long ago are dropped.
type backoff struct {
	base, max time.Duration
	keys      map[string]backoffState
}

type backoffState struct {
	failures int
	until    time.Time
}

func newBackoff(base, max time.Duration) *backoff {
	return &backoff{base: base, max: max, keys: map[string]backoffState{}}
}

// waiting says until when key is refused (zero: it is not).
func (b *backoff) waiting(key string, now time.Time) time.Time {
	s, ok := b.keys[key]
	if !ok || !now.Before(s.until) {
		return time.Time{}
	}
	return s.until
}

// failed records a failure of key at now.
func (b *backoff) failed(key string, now time.Time) time.Duration {
	s := b.keys[key]
	s.failures++
	wait := b.base
	for i := 1; i < s.failures && wait < b.max; i++ {
		wait *= 2
	}
	wait = min(wait, b.max)
	s.until = now.Add(wait)
	b.keys[key] = s
	return wait
}

// succeeded forgets key.
func (b *backoff) succeeded(key string) { delete(b.keys, key) }

// forget drops the keys whose wait ended more than max ago: a change that
// fails again after that starts from base.
func (b *backoff) forget(now time.Time) {
	for k, s := range b.keys {
		if now.Sub(s.until) > b.max {
			delete(b.keys, k)
		}
	}
}
