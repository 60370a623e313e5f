/*
 * spank_gangtopo.h - shared state of the SPANK plugin's context files.
 */
#ifndef SPANK_GANGTOPO_H
#define SPANK_GANGTOPO_H

#include <slurm/spank.h>

#include "gangtopo_option.h"

#define GT_PLUGIN "gangtopo"
#define GT_ENV_DEFAULT "GANGTOPO_TOPOLOGY"	/* user default, like SBATCH_* */
#define GT_CONTROL_VAR "GANG_TOPOLOGY"		/* job control env: slurmctld sees GANG_TOPOLOGY=... */
#define GT_SOURCE_VAR "GANG_TOPOLOGY_SOURCE"	/* and, for a default, GANG_TOPOLOGY_SOURCE=environment */
#define GT_SOURCE_ENV "environment"
#define GT_NODEFILE_DIR "/var/lib/gangtopo/nodes"

/* The option as given on the command line (or from the environment). */
extern struct gt_option gt_opt;
extern int gt_opt_set;

/*
 * set_env=: which steps get CUDA_DEVICE_ORDER and NCCL_IB_HCA, the two
 * variables that change how CUDA and NCCL behave (the GANGTOPO_* ones are
 * only information). Default gang: a job that did not ask for gangtopo
 * keeps the libraries' defaults.
 */
enum gt_set_env {
	GT_SETENV_GANG = 0,	/* steps with GPUs of jobs that gave --gang-topology (or $GANGTOPO_TOPOLOGY) */
	GT_SETENV_GPU,		/* every step with GPUs */
	GT_SETENV_NONE,		/* never */
};

/* Plugin arguments from plugstack.conf. */
struct gt_args {
	char nodefile_dir[256];	/* "%n" stands for the node name */
	enum gt_set_env set_env;
};
extern struct gt_args gt_args;

int gt_parse_args(int ac, char **av);

/* Context handlers: spank_client.c (sbatch, salloc, srun) and spank_remote.c (slurmstepd). */
int gt_client_option(const char *optarg);
int gt_client_post_opt(spank_t sp);
int gt_remote_user_init(spank_t sp);

#endif
