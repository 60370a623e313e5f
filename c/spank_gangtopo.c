/*
 * spank_gangtopo.c - SPANK entry points of gangtopo: --gang-topology for
 * sbatch, salloc and srun, and the placement environment of job steps.
 *
 * Only dispatch lives here: each Slurm context has its own file. No Go is
 * ever loaded by this plugin: it runs in slurmstepd, where Go after fork
 * hangs (see docs/admin.md).
 */
#include <stdio.h>
#include <string.h>

#include "gangtopo_quote.h"
#include "gangtopo_slurm.h"
#include "spank_gangtopo.h"

SPANK_PLUGIN(gangtopo, 1);

struct gt_option gt_opt;
int gt_opt_set;
struct gt_args gt_args = { .nodefile_dir = GT_NODEFILE_DIR, .set_env = GT_SETENV_GANG };

static int option_cb(int val, const char *optarg, int remote);

/*
 * Registered with spank_option_register() in slurm_spank_init: sbatch and
 * salloc ignore a static spank_options table.
 */
static struct spank_option gang_topology_opt = {
	"gang-topology", "TIER[:MODE][,slice=S]",
	"Place the job's GPUs inside one topology domain. TIER: " GT_TIERS
	"; MODE: required (default; wait for such a domain) or preferred (start wider"
	" if none is free); slice=S: every S GPUs share one NVLink domain."
	" Default: $" GT_ENV_DEFAULT ".",
	1, 0, option_cb
};

static int parse_set_env(const char *v)
{
	static const char *const names[] = { [GT_SETENV_GANG] = "gang", [GT_SETENV_GPU] = "gpu", [GT_SETENV_NONE] = "none" };

	for (int i = 0; i < 3; i++) {
		if (!strcmp(v, names[i])) {
			gt_args.set_env = (enum gt_set_env)i;
			return 0;
		}
	}
	return -1;
}

int gt_parse_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		char q[300];

		if (!strncmp(av[i], "nodefile_dir=", 13) && strlen(av[i] + 13) < sizeof(gt_args.nodefile_dir)) {
			snprintf(gt_args.nodefile_dir, sizeof(gt_args.nodefile_dir), "%s", av[i] + 13);
			continue;
		}
		if (!strncmp(av[i], "set_env=", 8) && parse_set_env(av[i] + 8) == 0)
			continue;
		slurm_error("%s: plugstack.conf: bad argument %s (want nodefile_dir=DIR, set_env=gang|gpu|none)",
			    GT_PLUGIN, gt_quote(av[i], q, sizeof(q)));
		return -1;
	}
	return 0;
}

static int option_cb(int val, const char *optarg, int remote)
{
	(void)val;
	if (remote) {
		/* slurmstepd calls this twice per step: keep it idempotent. */
		char err[256];

		gt_opt_set = gt_option_parse(optarg, &gt_opt, err, sizeof(err)) == 0;
		return 0;
	}
	return gt_client_option(optarg);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
		if (gt_parse_args(ac, av) < 0)
			return -1;
		return spank_option_register(sp, &gang_topology_opt) == ESPANK_SUCCESS ? 0 : -1;
	case S_CTX_SLURMD:
		/* once per slurmd start: which Slurm this build is for */
		slurm_info("%s: SPANK plugin built for Slurm %d.%02d.%d", GT_PLUGIN, GT_SLURM_RELEASE_ARGS);
		return 0;
	default:
		return 0;
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
		return gt_client_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE)
		return gt_remote_user_init(sp);
	return 0;
}
