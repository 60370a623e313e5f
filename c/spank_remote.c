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
 * Facts come from this node's file in nodefile_dir (written by the gangtopo
 * daemon on this node; format and the checks made before trusting it in
 * gangtopo_nodefile.h). A node reads no other node's file: the tightest
 * domain of a multi-node step comes from the member lists of this node's
 * own domains, so a node-local directory is enough and a shared one sees
 * one read per node, not one per node pair. Runs in slurm_spank_user_init,
 * once per step and node, before the tasks fork. slurm_hostlist_shift
 * returns malloc()ed names (free(), not xfree; checked on 22.05, 24.11 and
 * 26.05); gt_hostlist_t is hostlist_t as each series spells it
 * (gangtopo_slurm.h).
 *
 * CUDA_DEVICE_ORDER and NCCL_IB_HCA change how the libraries behave, so
 * set_env= (plugstack.conf) says which steps get them: by default (gang)
 * only steps with GPUs of jobs that asked for --gang-topology.
 *
 * Nothing here may fail a job: a missing or bad node file is logged and
 * the variables it would give are left out. Values the user set already
 * (CUDA_DEVICE_ORDER, NCCL_IB_HCA) are kept, however long.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "gangtopo_nodefile.h"
#include "gangtopo_slurm.h"
#include "spank_gangtopo.h"

#define GT_MAX_STEP_NODES 4096	/* beyond this, GANGTOPO_TIER is not computed */
#define GT_NICS_VAR "GANGTOPO_NCCL_IB_HCA"	/* the NCCL_IB_HCA value we set */

/* getenv_sp: 1 with buf set, 0 when unset or empty, -1 when longer than len. */
static int getenv_sp(spank_t sp, const char *name, char *buf, int len)
{
	spank_err_t rc = spank_getenv(sp, name, buf, len);

	if (rc == ESPANK_NOSPACE)
		return -1;
	return rc == ESPANK_SUCCESS && buf[0];
}

static void set(spank_t sp, const char *name, const char *value, int overwrite)
{
	if (spank_setenv(sp, name, value, overwrite) != ESPANK_SUCCESS && overwrite)
		slurm_error("%s: cannot set %s", GT_PLUGIN, name);
}

static int read_node(const char *node, struct gt_nodefile *nf)
{
	char err[1024];

	if (gt_nodefile_load(gt_args.nodefile_dir, node, nf, err, sizeof(err)) < 0) {
		slurm_error("%s: node file: %s (NCCL_IB_HCA and GANGTOPO_* topology left unset)", GT_PLUGIN, err);
		return -1;
	}
	return 0;
}

/* step_nodes returns the step's node list (the job's for a batch step). */
static int step_nodes(spank_t sp, char *buf, int len)
{
	int rc = getenv_sp(sp, "SLURM_STEP_NODELIST", buf, len);

	if (rc == 0)
		rc = getenv_sp(sp, "SLURM_JOB_NODELIST", buf, len);
	if (rc < 0)
		slurm_error("%s: the step's node list is longer than %d bytes (GANGTOPO_* topology left unset)", GT_PLUGIN,
			    len - 1);
	return rc > 0;
}

/* this_node finds this node's name: the S_JOB_NODEID-th of the step's nodes. */
static int this_node(spank_t sp, const char *nodes, char *name, size_t len)
{
	uint32_t id = 0;
	gt_hostlist_t hl;
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
 * common_domain returns the index of the tightest of this node's domains
 * whose members hold every node of the step, -1 if none does, -2 if that
 * cannot be told (a domain without members: a v1 file; a step too big).
 */
static int common_domain(const char *nodes, const struct gt_nodefile *me)
{
	gt_hostlist_t dom[GT_MAX_DOMAINS] = { 0 }, step = slurm_hostlist_create(nodes);
	int first = 0, n = 0;
	char *h;

	for (int i = 0; i < me->ndomains; i++)
		if (!gt_domain_members(me, i) || !(dom[i] = slurm_hostlist_create(gt_domain_members(me, i))))
			first = -2;
	if (!step)
		first = -2;
	while (first >= 0 && first < me->ndomains && (h = slurm_hostlist_shift(step))) {
		if (++n > GT_MAX_STEP_NODES)
			first = -2;
		while (first >= 0 && first < me->ndomains && slurm_hostlist_find(dom[first], h) < 0)
			first++;
		free(h);
	}
	if (first >= me->ndomains)
		first = -1;
	for (int i = 0; i < me->ndomains; i++)
		if (dom[i])
			slurm_hostlist_destroy(dom[i]);
	if (step)
		slurm_hostlist_destroy(step);
	return first;
}

/* export_placement sets GANGTOPO_TIER/_DOMAIN for the step. */
static void export_placement(spank_t sp, const char *nodes, const struct gt_nodefile *me, uint64_t gpus)
{
	gt_hostlist_t hl = slurm_hostlist_create(nodes);
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
	} else if (d == -2) {
		slurm_info("%s: node file of %s lists no members for its domains (written by an older gangtopo "
			   "daemon?), or the step has more than %d nodes: GANGTOPO_TIER left unset",
			   GT_PLUGIN, me->node, GT_MAX_STEP_NODES);
	}
}

/*
 * nccl_ours says whether NCCL_IB_HCA is free for us to set: unset, or the
 * value we exported for an enclosing step (a step inherits the batch
 * step's environment, where we set it for all of the node's GPUs). A value
 * the user chose is kept, also one too long for our buffers.
 */
static int nccl_ours(spank_t sp)
{
	static char cur[GT_NICS_MAX + 1], ours[GT_NICS_MAX + 1];
	int rc = getenv_sp(sp, "NCCL_IB_HCA", cur, sizeof(cur));

	if (rc == 0)
		return 1;
	return rc > 0 && getenv_sp(sp, GT_NICS_VAR, ours, sizeof(ours)) > 0 && !strcmp(cur, ours);
}

static void export_domains(spank_t sp, const struct gt_nodefile *me)
{
	char var[64];

	for (int i = 0; i < me->ndomains; i++) {
		const char *t = me->domains[i].tier;

		if (!strcmp(t, "any"))
			continue;
		snprintf(var, sizeof(var), "GANGTOPO_%s", t);
		for (char *p = var; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		set(sp, var, me->domains[i].name, 1);
	}
}

static void export_nics(spank_t sp, const struct gt_nodefile *me, uint64_t gpus)
{
	static char nics[GT_NICS_MAX + 1];

	nics[0] = '=';	/* exact names: "mlx5_1" must not match mlx5_10 */
	switch (gt_nics_for(me, gpus, nics + 1, sizeof(nics) - 1)) {
	case -1:
		slurm_error("%s: node file of %s: the NIC list does not fit in %zu bytes: NCCL_IB_HCA left unset",
			    GT_PLUGIN, me->node, sizeof(nics) - 2);
		return;
	case 0:
		return;
	}
	if (nccl_ours(sp)) {
		set(sp, "NCCL_IB_HCA", nics, 1);
		set(sp, GT_NICS_VAR, nics, 1);
	}
}

/* wants_env says whether set_env= gives this step CUDA_DEVICE_ORDER and NCCL_IB_HCA. */
static int wants_env(int has_gpus)
{
	switch (gt_args.set_env) {
	case GT_SETENV_NONE:
		return 0;
	case GT_SETENV_GPU:
		return has_gpus;
	default:
		return has_gpus && gt_opt_set;
	}
}

int gt_remote_user_init(spank_t sp)
{
	static char nodes[65536];
	static struct gt_nodefile me;	/* 64 KiB and more: not on slurmstepd's stack */
	char node[GT_NAME_MAX], buf[256];
	uint64_t gpus = 0;
	int has_gpus;

	if (!gt_opt_set && getenv_sp(sp, "SLURM_SPANK_" GT_CONTROL_VAR, buf, sizeof(buf)) > 0) {
		/* no option on this step: the job's, as sbatch forwarded it
		 * (from --gang-topology or $GANGTOPO_TOPOLOGY) */
		char err[256];

		gt_opt_set = gt_option_parse(buf, &gt_opt, err, sizeof(err)) == 0;
	}
	if (gt_opt_set) {
		gt_option_format(&gt_opt, buf, sizeof(buf));
		set(sp, "GANGTOPO_REQUEST", buf, 1);
	}
	has_gpus = getenv_sp(sp, "SLURM_STEP_GPUS", buf, sizeof(buf)) > 0 ||
		   getenv_sp(sp, "SLURM_JOB_GPUS", buf, sizeof(buf)) > 0;
	if (has_gpus)
		(void)gt_gpu_mask(buf, &gpus);
	if (wants_env(has_gpus))
		set(sp, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	if (!step_nodes(sp, nodes, sizeof(nodes)) || this_node(sp, nodes, node, sizeof(node)) < 0)
		return 0;
	if (read_node(node, &me) < 0)
		return 0;
	export_domains(sp, &me);
	if (wants_env(has_gpus))
		export_nics(sp, &me, gpus);
	export_placement(sp, nodes, &me, gpus);
	return 0;
}
