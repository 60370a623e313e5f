/*
 * gangtopo_abi.h - the C ABI of libgangtopo.so, the Go placement core that
 * job_submit_gangtopo.so links inside slurmctld.
 *
 * The ABI knows nothing of Slurm's structures: the shim copies the fields
 * gangtopo reads out of job_desc_msg_t into struct gt_job and applies the
 * returned struct gt_result, so one libgangtopo.so serves every Slurm
 * release and only the small shim is built per release series.
 *
 * Rules on both sides:
 *  - Every function returns; none lets a Go panic cross into C. An internal
 *    failure is reported as GT_ERR with a log line, never by crashing.
 *  - Strings in gt_job are borrowed for the call. Strings in gt_result are
 *    malloc()ed by libgangtopo; release them with gt_result_free().
 *  - gt_submit is called by one thread at a time (slurmctld serialises
 *    job_submit); it never blocks on I/O and returns within the configured
 *    deadline.
 */
#ifndef GANGTOPO_ABI_H
#define GANGTOPO_ABI_H

#include <stdint.h>

#define GT_ABI_VERSION 1

/* Return codes. */
#define GT_OK 0
#define GT_ERR (-1)

/* What the shim does with a job. */
enum gt_action {
	GT_KEEP = 0,	/* leave the job exactly as submitted */
	GT_MODIFY = 1,	/* apply the non-NULL fields of gt_result */
	GT_REJECT = 2,	/* refuse it; err_msg goes to the user */
};

/* Log levels of gt_result.log. */
enum gt_log_level {
	GT_LOG_NONE = 0,
	GT_LOG_DEBUG = 1,
	GT_LOG_INFO = 2,
	GT_LOG_ERROR = 3,
};

/* The job, as submitted. NULL strings mean "not given"; counts 0 likewise. */
struct gt_job {
	uint32_t user_id;
	const char *name;
	const char *partition;
	const char *gang_topology;	/* GANG_TOPOLOGY from spank_job_env */
	const char *tres_per_job;	/* e.g. "gres:gpu:h100:16" */
	const char *tres_per_node;
	const char *tres_per_socket;
	const char *tres_per_task;
	const char *cpus_per_tres;	/* e.g. "gres:gpu:4" */
	const char *mem_per_tres;
	const char *features;
	const char *prefer;
	const char *req_nodes;
	const char *exc_nodes;
	const char *comment;
	uint32_t min_nodes;
	uint32_t max_nodes;
	uint32_t num_tasks;
	uint16_t ntasks_per_node;
	uint16_t cpus_per_task;
	uint32_t min_cpus;
	uint64_t pn_min_memory;		/* MiB; bit 63 set: per CPU (MEM_PER_CPU) */
};

/*
 * The decision. For GT_MODIFY every non-NULL string replaces the job's
 * field ("" clears it); min_nodes/max_nodes replace the job's when > 0.
 */
struct gt_result {
	int action;			/* enum gt_action */
	int log_level;			/* enum gt_log_level */
	char *log;			/* one line for slurmctld's log */
	char *err_msg;			/* GT_REJECT: the message for the user */
	char *features;
	char *prefer;
	char *req_nodes;
	char *exc_nodes;
	char *tres_per_job;
	char *tres_per_node;
	uint32_t min_nodes;
	uint32_t max_nodes;
	char *comment;
	char *admin_comment;
};

/*
 * The prototypes. libgangtopo's own cgo preamble defines
 * GT_ABI_NO_PROTOTYPES: cgo declares the exported functions itself, without
 * const, and would otherwise see conflicting types.
 */
#ifndef GT_ABI_NO_PROTOTYPES

/* gt_abi_version returns GT_ABI_VERSION of the library. */
int gt_abi_version(void);

/*
 * gt_init loads the configuration (config_path, or $GANGTOPO_CONFIG, or
 * /etc/slurm/gangtopo.yaml when NULL) and the topology, and starts the
 * background snapshot reload. On GT_ERR *err holds a malloc()ed message.
 * A second call replaces the first configuration (reconfigure).
 */
int gt_init(const char *config_path, char **err);

/* gt_fini stops the background reload. */
void gt_fini(void);

/*
 * gt_submit decides about one job. It always fills *res (GT_KEEP at least)
 * and returns GT_ERR only when something inside gangtopo failed (the
 * result then follows the configured failure mode).
 */
int gt_submit(const struct gt_job *job, struct gt_result *res);

/*
 * gt_poll_log returns the oldest pending message of the background snapshot
 * reload (malloc()ed; the caller frees it), or NULL. The shim logs these
 * on slurmctld's thread, each as its own line.
 */
char *gt_poll_log(void);

/* gt_result_free releases the strings of a result and zeroes it. */
void gt_result_free(struct gt_result *res);

#endif /* GT_ABI_NO_PROTOTYPES */

#endif
