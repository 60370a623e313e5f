/*
 * spank_remote.c - remote context (slurmstepd): export to the job what its
 * placement means for the tasks.
 *
 *	CUDA_DEVICE_ORDER=PCI_BUS_ID	CUDA numbers GPUs as Slurm and nvidia-smi do
 *	NCCL_IB_HCA==mlx5_0,mlx5_1	the NICs nearest this node's GPUs of the step
 *	GANGTOPO_NCCL_IB_HCA		the same: tells a later step the value is ours
 *	GANGTOPO_REQUEST		the --gang-topology value, canonical
 *	GANGTOPO_TIER, GANGTOPO_DOMAIN	the tightest domain holding all the step's
 *					nodes (and GPUs, on one node)
 *	GANGTOPO_BLOCK/_LEAF/_SPINE	this node's domains
 *
 * Facts come from the per-node files in nodefile_dir (one per node, written
 * by the gangtopo daemon; format in gangtopo_nodefile.h). Runs in
 * slurm_spank_user_init, once per step and node, before the tasks fork.
 * slurm_hostlist_shift returns malloc()ed names in 22.05 (free(), not xfree).
 * Nothing here may fail a job: a missing or bad node file is logged and
 * the variables it would give are left out. Values the user set already
 * (CUDA_DEVICE_ORDER, NCCL_IB_HCA) are kept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "gangtopo_nodefile.h"
#include "spank_gangtopo.h"

#define GT_MAX_STEP_NODES 4096
#define GT_NICS_VAR "GANGTOPO_NCCL_IB_HCA"	/* the NCCL_IB_HCA value we set */	/* beyond this, GANGTOPO_TIER is not computed */

static int getenv_sp(spank_t sp, const char *name, char *buf, int len)
{
	return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS && buf[0];
}

static void set(spank_t sp, const char *name, const char *value, int overwrite)
{
	if (spank_setenv(sp, name, value, overwrite) != ESPANK_SUCCESS && overwrite)
		slurm_error("%s: cannot set %s", GT_PLUGIN, name);
}

static int read_node(const char *node, struct gt_nodefile *nf)
{
	char path[512], err[512];

	if (snprintf(path, sizeof(path), "%s/%s", gt_args.nodefile_dir, node) >= (int)sizeof(path))
		return -1;
	if (gt_nodefile_read(path, nf, err, sizeof(err)) < 0) {
		slurm_error("%s: node file: %s (NCCL_IB_HCA and GANGTOPO_* topology left unset)", GT_PLUGIN, err);
		return -1;
	}
	return 0;
}

/* step_nodes returns the step's node list (the job's for a batch step). */
static int step_nodes(spank_t sp, char *buf, int len)
{
	return getenv_sp(sp, "SLURM_STEP_NODELIST", buf, len) || getenv_sp(sp, "SLURM_JOB_NODELIST", buf, len);
}

/* this_node finds this node's name: the S_JOB_NODEID-th of the step's nodes. */
static int this_node(spank_t sp, const char *nodes, char *name, size_t len)
{
	uint32_t id = 0;
	hostlist_t hl;
	char *h;
	int rc = -1;

	if (spank_get_item(sp, S_JOB_NODEID, &id) != ESPANK_SUCCESS || !(hl = slurm_hostlist_create(nodes)))
		return -1;
	for (uint32_t i = 0; (h = slurm_hostlist_shift(hl)); i++) {
		if (i == id && strlen(h) < len) {
			strcpy(name, h);
			rc = 0;
		}
		free(h);
		if (i >= id)
			break;
	}
	slurm_hostlist_destroy(hl);
	return rc;
}

/*
 * common_domain narrows *me (this node's domains, tightest first) to the
 * ones every node of the step shares: returns the index of the tightest
 * shared domain, -1 if none, -2 if a file was unreadable or the step too big.
 */
static int common_domain(const char *nodes, const struct gt_nodefile *me)
{
	struct gt_nodefile other;
	hostlist_t hl = slurm_hostlist_create(nodes);
	int first = 0, n = 0;
	char *h;

	if (!hl)
		return -2;
	while (first >= 0 && (h = slurm_hostlist_shift(hl))) {
		if (++n > GT_MAX_STEP_NODES || (strcmp(h, me->node) && read_node(h, &other) < 0)) {
			first = -2;
		} else if (strcmp(h, me->node)) {
			while (first < me->ndomains) {
				int ok = 0;

				for (int j = 0; j < other.ndomains; j++)
					ok |= !strcmp(other.domains[j].tier, me->domains[first].tier) &&
					      !strcmp(other.domains[j].name, me->domains[first].name);
				if (ok)
					break;
				first++;
			}
			if (first == me->ndomains)
				first = -1;
		}
		free(h);
	}
	slurm_hostlist_destroy(hl);
	return first;
}

/* export_placement sets GANGTOPO_TIER/_DOMAIN for the step. */
static void export_placement(spank_t sp, const char *nodes, const struct gt_nodefile *me, uint64_t gpus)
{
	hostlist_t hl = slurm_hostlist_create(nodes);
	int count = hl ? slurm_hostlist_count(hl) : 0, d;

	if (hl)
		slurm_hostlist_destroy(hl);
	if (count == 1) {
		for (int i = 0; i < me->nislands; i++) {
			if (gpus && (gpus & ~me->islands[i].gpus) == 0) {
				set(sp, "GANGTOPO_TIER", "nvlink", 1);
				set(sp, "GANGTOPO_DOMAIN", me->islands[i].name, 1);
				return;
			}
		}
		set(sp, "GANGTOPO_TIER", "node", 1);
		set(sp, "GANGTOPO_DOMAIN", me->node, 1);
		return;
	}
	d = common_domain(nodes, me);
	if (d >= 0) {
		set(sp, "GANGTOPO_TIER", me->domains[d].tier, 1);
		set(sp, "GANGTOPO_DOMAIN", me->domains[d].name, 1);
	}
}

/*
 * nccl_ours says whether NCCL_IB_HCA is free for us to set: unset, or the
 * value we exported for an enclosing step (a step inherits the batch
 * step's environment, where we set it for all of the node's GPUs). A value
 * the user chose is kept.
 */
static int nccl_ours(spank_t sp)
{
	char cur[1024], ours[1024];

	if (!getenv_sp(sp, "NCCL_IB_HCA", cur, sizeof(cur)))
		return 1;
	return getenv_sp(sp, GT_NICS_VAR, ours, sizeof(ours)) && !strcmp(cur, ours);
}

static void export_node(spank_t sp, const struct gt_nodefile *me, uint64_t gpus)
{
	char nics[1024], var[64];

	for (int i = 0; i < me->ndomains; i++) {
		const char *t = me->domains[i].tier;

		if (!strcmp(t, "any"))
			continue;
		snprintf(var, sizeof(var), "GANGTOPO_%s", t);
		for (char *p = var; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		set(sp, var, me->domains[i].name, 1);
	}
	nics[0] = '=';	/* exact names: "mlx5_1" must not match mlx5_10 */
	if (gt_nics_for(me, gpus, nics + 1, sizeof(nics) - 1) > 0 && nccl_ours(sp)) {
		set(sp, "NCCL_IB_HCA", nics, 1);
		set(sp, GT_NICS_VAR, nics, 1);
	}
}

int gt_remote_user_init(spank_t sp)
{
	char nodes[8192], node[GT_NAME_MAX], buf[256];
	struct gt_nodefile me;
	uint64_t gpus = 0;

	set(sp, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	if (!gt_opt_set && getenv_sp(sp, "SLURM_SPANK_" GT_CONTROL_VAR, buf, sizeof(buf))) {
		/* no option on this step: the job's, as sbatch forwarded it
		 * (from --gang-topology or $GANGTOPO_TOPOLOGY) */
		char err[256];

		gt_opt_set = gt_option_parse(buf, &gt_opt, err, sizeof(err)) == 0;
	}
	if (gt_opt_set) {
		gt_option_format(&gt_opt, buf, sizeof(buf));
		set(sp, "GANGTOPO_REQUEST", buf, 1);
	}
	if (!step_nodes(sp, nodes, sizeof(nodes)) || this_node(sp, nodes, node, sizeof(node)) < 0)
		return 0;
	if (read_node(node, &me) < 0)
		return 0;
	if (getenv_sp(sp, "SLURM_STEP_GPUS", buf, sizeof(buf)) || getenv_sp(sp, "SLURM_JOB_GPUS", buf, sizeof(buf)))
		(void)gt_gpu_mask(buf, &gpus);
	export_node(sp, &me, gpus);
	export_placement(sp, nodes, &me, gpus);
	return 0;
}
