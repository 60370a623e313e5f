package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
)

// quotaMetrics are the quota duty's Prometheus series: the ledger per
// account, the changes made and the errors.
type quotaMetrics struct {
	account        *prometheus.GaugeVec
	pool, borrowed prometheus.Gauge
	changes        *prometheus.CounterVec
	errors         *prometheus.CounterVec
}

func newQuotaMetrics(reg prometheus.Registerer) *quotaMetrics {
	m := &quotaMetrics{
		account: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gangtopo_quota_gpus",
			Help: "Each account's quota ledger in GPUs, by figure: guaranteed, in_use, borrowed, lent, waiting, cannot_borrow (waiting beyond the share, but Slurm may not requeue the jobs: they never borrow), frag (stranded GPUs its jobs cause), charge (frag x weight, counted against the share)."}, []string{"account", "figure"}),
		pool:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_quota_pool_gpus", Help: "GPUs the lending accounts may lend now."}),
		borrowed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_quota_borrowed_gpus", Help: "GPUs held beyond the accounts' shares."}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_quota_changes_total",
			Help: "Changes the quota duty made in Slurm, by kind: limit (a QOS GrpTRES), move (a waiting job to another QOS), reclaim (an entitled job pinned in the reclaim QOS), release (a reclaim pin undone when it expired or quotas went off, or a job left in the reclaim QOS without its pin put back)."}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_quota_errors_total",
			Help: "Quota cycles that changed nothing or stopped, and changes not made, by step: read, check, limit, move, reclaim, release."}, []string{"step"}),
	}
	reg.MustRegister(m.account, m.pool, m.borrowed, m.changes, m.errors)
	return m
}

func (m *quotaMetrics) observe(c *quotaexec.Cycle) {
	m.account.Reset()
	for _, u := range c.Ledger.Accounts {
		for fig, v := range map[string]float64{"guaranteed": float64(u.Guaranteed), "in_use": float64(u.InUse),
			"borrowed": float64(u.Borrowed), "lent": float64(u.Lent), "waiting": float64(u.Waiting),
			"cannot_borrow": float64(c.CannotBorrow[u.Account]), "frag": u.Frag, "charge": u.Charge} {
			m.account.WithLabelValues(u.Account, fig).Set(v)
		}
	}
	m.pool.Set(float64(c.Ledger.Pool))
	m.borrowed.Set(float64(c.Ledger.Borrowed))
}
