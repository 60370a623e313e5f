/*
 * spank_client.c - allocator (sbatch, salloc) and local (srun) context:
 * validate --gang-topology at submit time and forward it to slurmctld.
 *
 * A bad value fails the command at once (callback returns -1; sbatch exits
 * 255 with our message) rather than pending a job that can never start.
 * The value travels to slurmctld as job control environment
 * GANG_TOPOLOGY=<canonical form>, where job_submit/gangtopo reads it from
 * job_desc->spank_job_env. A value that came from $GANGTOPO_TOPOLOGY rather
 * than the command line also sends GANG_TOPOLOGY_SOURCE=environment: a
 * default applies to the jobs it fits, so job_submit/gangtopo refuses no
 * job for it (a CPU job, say) and leaves such jobs alone quietly.
 */
#include <stdlib.h>
#include <string.h>

#include "spank_gangtopo.h"

int gt_client_option(const char *optarg)
{
	char err[256];

	if (gt_option_parse(optarg, &gt_opt, err, sizeof(err)) < 0) {
		slurm_error("%s: %s", GT_PLUGIN, err);
		return -1;
	}
	gt_opt_set = 1;
	return 0;
}

/* from_env: gt_opt came from $GANGTOPO_TOPOLOGY, not --gang-topology. */
static int from_env;

/* apply_env_default takes $GANGTOPO_TOPOLOGY when no option was given. */
static int apply_env_default(void)
{
	const char *v = getenv(GT_ENV_DEFAULT);
	char err[256];

	if (gt_opt_set || !v || !*v)
		return 0;
	if (gt_option_parse(v, &gt_opt, err, sizeof(err)) < 0) {
		/* name the variable, not the option the user never typed */
		slurm_error("%s: $%s: %s", GT_PLUGIN, GT_ENV_DEFAULT, err + strlen("--gang-topology: "));
		return -1;
	}
	gt_opt_set = 1;
	from_env = 1;
	return 0;
}

int gt_client_post_opt(spank_t sp)
{
	char value[GT_OPTION_MAX + 32];
	spank_err_t rc;

	if (apply_env_default() < 0)
		return -1;
	if (!gt_opt_set)
		return 0;
	gt_option_format(&gt_opt, value, sizeof(value));
	rc = spank_job_control_setenv(sp, GT_CONTROL_VAR, value, 1);
	if (rc == ESPANK_SUCCESS && from_env)
		rc = spank_job_control_setenv(sp, GT_SOURCE_VAR, GT_SOURCE_ENV, 1);
	if (rc != ESPANK_SUCCESS && spank_context() == S_CTX_ALLOCATOR) {
		slurm_error("%s: cannot pass --gang-topology to slurmctld: %s", GT_PLUGIN, spank_strerror(rc));
		return -1;
	}
	/* srun inside an allocation has no job to control: nothing to pass */
	return 0;
}
