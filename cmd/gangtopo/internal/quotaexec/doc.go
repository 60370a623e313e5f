// Package quotaexec carries gangtopo's dynamic quotas (selector/quota)
// out through Slurm: it reads and writes the QOS and associations in
// Slurm's accounting database with sacctmgr, checks gangtopo.yaml's quota:
// section against them, and works out the QOS limits the ledger calls for.
//
// How the shares live in Slurm (docs/quota.md):
//
//	<account's QOS>   gt-<account> by default: the account's default QOS,
//	                  GrpTRES=gres/gpu=<share> (less what the account runs
//	                  in the reclaim QOS), no Preempt: its jobs never
//	                  preempt on their own
//	borrow QOS        gt-borrow: jobs beyond their share, on lent GPUs;
//	                  PreemptMode=REQUEUE; GrpTRES=gres/gpu= what runs
//	                  there plus what may still be lent
//	reclaim QOS       gt-reclaim: Preempt=<borrow QOS>; the controller
//	                  moves an entitled job there, pinned (ReqNodeList) to
//	                  the nodes its reclaim plan frees, so Slurm preempts
//	                  the borrowed jobs there and nowhere else
//
// Every account with a share may use the three (its association's QOS
// list), its own QOS as default. `gangtopo quota sync` makes this so; the
// controller keeps the limits in step and refuses to act (changing
// nothing) while Slurm disagrees with gangtopo.yaml in a way it may not fix
// itself: an account Slurm does not know, a QOS missing, shares that do not
// fit the cluster.
package quotaexec
