package quota

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Share is one account's guarantee.
type Share struct {
	// Account is the Slurm account (case as Slurm prints it: lower case).
	Account string
	// GPUs is the guaranteed share.
	GPUs int
	// Cap bounds the GPUs the account may hold, borrowed ones included; 0
	// means no cap beyond the cluster.
	Cap int
	// Lend says whether the account lends its idle share to others.
	Lend bool
}

// Shares is a site's table of shares, one per account.
type Shares []Share

// Validate checks the table against a cluster of clusterGPUs GPUs: every
// account named once, no negative share or cap, a cap not below its share,
// and the shares summing to at most the cluster (a guarantee the cluster
// cannot keep is no guarantee). Each error names the account and what is
// allowed; all are reported at once.
func (sh Shares) Validate(clusterGPUs int) error {
	var errs []error
	seen := map[string]bool{}
	sum := 0
	for _, s := range sh {
		name := strings.ToLower(s.Account)
		switch {
		case s.Account == "":
			errs = append(errs, errors.New("a share without an account name"))
		case seen[name]:
			errs = append(errs, fmt.Errorf("account %s: given twice (Slurm's account names ignore case)", s.Account))
		case s.GPUs < 0:
			errs = append(errs, fmt.Errorf("account %s: share %d is negative (want 0 or more GPUs)", s.Account, s.GPUs))
		case s.Cap < 0:
			errs = append(errs, fmt.Errorf("account %s: cap %d is negative (want 0 for none, or at least the share)", s.Account, s.Cap))
		case s.Cap > 0 && s.Cap < s.GPUs:
			errs = append(errs, fmt.Errorf("account %s: cap %d is below its share %d (want 0 for none, or at least the share)", s.Account, s.Cap, s.GPUs))
		}
		seen[name] = true
		sum += max(s.GPUs, 0)
	}
	if sum > clusterGPUs {
		errs = append(errs, fmt.Errorf("the shares sum to %d GPUs, past the cluster's %d: lower them so they fit (the GPUs in no share are lent to all)", sum, clusterGPUs))
	}
	return errors.Join(errs...)
}

// Find returns the share of account (case ignored).
func (sh Shares) Find(account string) (Share, bool) {
	for _, s := range sh {
		if strings.EqualFold(s.Account, account) {
			return s, true
		}
	}
	return Share{}, false
}

// index is the position of account's share, -1 when it has none.
func (sh Shares) index(account string) int {
	for i, s := range sh {
		if strings.EqualFold(s.Account, account) {
			return i
		}
	}
	return -1
}

// Sum is the GPUs guaranteed in all.
func (sh Shares) Sum() int {
	n := 0
	for _, s := range sh {
		n += s.GPUs
	}
	return n
}

// Proportional splits n into whole parts in proportion to weights (each
// >= 0): every part is rounded down, then the largest remainders get one
// more each (ties: the earlier weight) until the parts sum to n. All
// weights zero: all parts zero.
func Proportional(n int, weights []float64) []int {
	parts := make([]int, len(weights))
	total := 0.0
	for _, w := range weights {
		total += w
	}
	if n <= 0 || total <= 0 {
		return parts
	}
	rem := make([]float64, len(weights))
	given := 0
	for i, w := range weights {
		exact := float64(n) * w / total
		parts[i] = int(exact)
		given += parts[i]
		rem[i] = exact - float64(parts[i])
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for k := 0; given < n; k++ {
		parts[order[k%len(order)]]++
		given++
	}
	return parts
}
