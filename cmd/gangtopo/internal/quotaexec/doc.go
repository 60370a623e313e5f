// Package quotaexec carries gangtopo's dynamic quotas (selector/quota)
// out through Slurm: it reads the QOS and associations in Slurm's
// accounting database with sacctmgr, checks gangtopo.yaml's quota:
// section against them, and works out the changes (QOS limits, sync,
// quota off) that the controller and the commands make through the door
// (actuate). It changes nothing itself.
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
//	reclaim QOS       gt-reclaim: Preempt=<borrow QOS>, GrpTRES=gres/gpu=
//	                  what the controller put there; the controller moves
//	                  an entitled job there, pinned (ReqNodeList) to the
//	                  nodes its reclaim plan frees, so Slurm preempts the
//	                  borrowed jobs there and nowhere else
//
// Authority: each account with a share may use its own QOS, as its
// default, and nothing else of gangtopo's. Only the controller puts jobs
// in the borrow and the reclaim QOS, as Slurm's operator, which needs no
// association to list them (Authority says where in Slurm's source);
// Check refuses to act while any association lists them, and
// CheckEnforce while AccountingStorageEnforce lacks limits or qos.
//
// Ownership: gangtopo changes only the QOS it created, each carrying its
// record in its description (Mark, mark.go), and the accounts' default
// QOS and QOS lists, whose former values those records keep. SyncPlan
// refuses a QOS gangtopo did not create; PlanOff puts back what sync
// changed. `gangtopo quota sync` makes this so; the controller keeps the
// limits in step and refuses to act (changing nothing) while Slurm
// disagrees with gangtopo.yaml in a way it may not fix itself: an account
// Slurm does not know, a QOS missing or not gangtopo's, a grant of the
// borrow or reclaim QOS, shares that do not fit the cluster.
package quotaexec
