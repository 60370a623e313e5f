/*
 * gangtopo_abi.h - the C ABI of libgangtopo.so, the Go placement core that
 * job_submit_gangtopo.so links inside slurmctld.
 *
 * The ABI knows nothing of Slurm's structures: the shim copies the fields
 * gangtopo reads out of job_desc_msg_t into struct gt_job and applies the
 * returned struct gt_result, so one libgangtopo.so serves every Slurm
 * release and only the small shim is built per release series.
 *
 * Two function calls (gt_init, gt_fini) and one pipe protocol. A
 * submission is never a call into Go: the shim writes the job to a pipe and
 * waits on another for the answer, which a goroutine of libgangtopo writes.
 * Why: slurmctld runs each RPC on its own thread, and every return from a
 * C->Go callback leaves a Go scheduler slot (P) attached to that thread
 * until the Go runtime's monitor (sysmon) takes it back, up to 10 ms later,
 * polling every 20 us meanwhile: CPU in slurmctld's process for every
 * submission, more than the decision itself. Over the pipes, Go's threads
 * park in the netpoller between jobs and sysmon sleeps. The measurements
 * that chose this design are in docs/benchmarks.md ("Recorded once, not
 * regenerated"; current runs: "Throughput: every run").
 *
 * The protocol (job_submit_gangtopo.c and gangtopo_channel.c implement C's
 * side; spank/libgangtopo/server.go Go's):
 *  1. At init the shim makes two pipes (O_CLOEXEC) and hands gt_init the
 *     read end of the request pipe and the write end of the response pipe;
 *     from then on libgangtopo owns both (it closes them, also on GT_ERR).
 *     gt_init publishes what the shim needs to decide alone (struct
 *     gt_params: the deadline, on_failure, the scope) and republishes it
 *     when gangtopo.yaml is reloaded.
 *  2. Per job the shim packs struct gt_job and every string it points to
 *     into ONE malloc()ed block and writes a struct gt_msg {seq, block} to
 *     the request pipe (non-blocking; one write of 16 bytes, atomic). Once
 *     that write succeeded the block belongs to libgangtopo, which reads it
 *     and free()s it; the shim never touches it again, even on a timeout.
 *     A write that fails (EAGAIN: libgangtopo is not reading) leaves the
 *     block to the shim, which frees it and treats gangtopo as unavailable.
 *  3. libgangtopo answers every request, in order, with a struct gt_msg
 *     {seq, result}: result is ONE malloc()ed block holding struct gt_result
 *     and its strings, released with free() (gt_result_release).
 *  4. The shim poll()s the response pipe for the deadline plus
 *     GT_REPLY_MARGIN_MS. An answer whose seq is not the one it waits for
 *     is a late answer to a request that timed out: its background lines
 *     are logged, the rest is released unread. On a timeout the shim
 *     follows on_failure itself, as libgangtopo would.
 *  5. gt_fini stops the goroutine and closes libgangtopo's ends (and frees
 *     the requests still in the pipe); then the shim reads what is left in
 *     the response pipe to the end, releases it and closes its own ends.
 *     Neither side ever writes to a pipe whose other end is closed, so no
 *     SIGPIPE can reach slurmctld.
 *
 * Rules on both sides:
 *  - Every function returns; none lets a Go panic cross into C. An internal
 *    failure is reported as GT_ERR or in the result with a log line, never
 *    by crashing.
 *  - Requests come from one thread at a time (slurmctld serialises
 *    job_submit, init and fini).
 */
#ifndef GANGTOPO_ABI_H
#define GANGTOPO_ABI_H

#include <stdint.h>
#include <stdlib.h>

#define GT_ABI_VERSION 6

/*
 * GT_REPLY_MARGIN_MS: how long past the deadline the shim waits for an
 * answer. The deadline bounds the engine only; the margin covers the rest
 * of a call (the snapshot, the rewrite, the hand-offs between threads; a
 * small share of it: docs/benchmarks.md, "Slurm plugin: time per call"),
 * and a Go thread that the kernel runs late on a loaded machine, at one
 * 10 ms scheduling slice a few times over.
 */
#define GT_REPLY_MARGIN_MS 50

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

/* What a request asks (struct gt_job.request). */
enum gt_request {
	GT_REQ_SUBMIT = 0,	/* job_submit: decide about a job as submitted */
	GT_REQ_MODIFY = 1,	/* job_modify: a user's update sets features or
				 * excluded nodes; keep gangtopo's binding */
};

/*
 * How a job shares its nodes (struct gt_job.shared): job_desc's shared,
 * set by --exclusive[=user|mcs|topo] and --oversubscribe.
 */
enum gt_shared {
	GT_SHARED_DEFAULT = 0,		/* not given: the partition's OverSubscribe */
	GT_SHARED_EXCLUSIVE = 1,	/* --exclusive: whole nodes */
	GT_SHARED_OVERSUBSCRIBE = 2,	/* --oversubscribe */
	GT_SHARED_USER = 3,		/* --exclusive=user */
	GT_SHARED_MCS = 4,		/* --exclusive=mcs */
	GT_SHARED_TOPO = 5,		/* --exclusive=topo (Slurm 25.05+) */
	GT_SHARED_OTHER = 6,		/* a value this shim does not know */
};

/* The fields a GT_REQ_MODIFY update sets (struct gt_job.changes). */
#define GT_CHANGE_FEATURES 0x1u
#define GT_CHANGE_EXC_NODES 0x2u

/*
 * The job, as submitted (GT_REQ_SUBMIT), or an update's new values
 * (GT_REQ_MODIFY: only user_id, job_id, changes, features and exc_nodes are
 * set). NULL strings mean "not given"; counts 0 likewise.
 */
struct gt_job {
	uint32_t user_id;
	const char *name;
	const char *partition;		/* as submitted: NULL without -p */
	const char *default_partition;	/* slurmctld's default partition, where
					 * Slurm puts a job without -p */
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
	const char *admin_comment;	/* set by an administrator or an earlier
					 * job_submit plugin; the decision is
					 * appended to it */
	uint32_t gang_topology_from_env; /* 1: gang_topology is the user's
					 * $GANGTOPO_TOPOLOGY default, not an
					 * explicit --gang-topology */
	uint32_t min_nodes;
	uint32_t max_nodes;
	uint32_t num_tasks;
	uint16_t ntasks_per_node;
	uint16_t cpus_per_task;
	uint32_t min_cpus;
	uint64_t pn_min_memory;		/* MiB; bit 63 set: per CPU (MEM_PER_CPU) */
	/* ABI 4: arrays, heterogeneous jobs, updates */
	const char *array_inx;		/* a job array's tasks ("0-49%5"); NULL for a job */
	uint32_t het_job;		/* 1: component het_job_offset of a heterogeneous job */
	uint32_t het_job_offset;
	uint32_t request;		/* enum gt_request */
	uint32_t changes;		/* GT_REQ_MODIFY: GT_CHANGE_* bits */
	const char *job_id;		/* GT_REQ_MODIFY: the job the update names
					 * ("123", "123_4", "123+1") */
	/* ABI 5: Slurm's block topology */
	uint32_t segment_size;		/* --segment (Slurm 24.05+); 0: not given */
	/*
	 * ABI 6: the options that change how Slurm counts the job's resources
	 * (selector/jobsubmit/options.go says what gangtopo makes of each);
	 * 0: not given
	 */
	uint32_t overcommit;		/* 1: --overcommit */
	uint32_t shared;		/* enum gt_shared */
	uint32_t mem_whole_node;	/* 1: --mem=0, all of each node's memory */
	uint32_t contiguous;		/* 1: --contiguous */
	uint32_t spread_job;		/* 1: --spread-job */
	uint32_t req_switch;		/* --switches=N */
	uint16_t pn_min_cpus;		/* --mincpus */
	uint16_t ntasks_per_tres;	/* --ntasks-per-gpu */
	uint16_t threads_per_core;	/* --threads-per-core (--hint) */
	uint16_t ntasks_per_core;	/* --ntasks-per-core (--hint) */
	uint16_t sockets_per_node;	/* --sockets-per-node */
	uint16_t cores_per_socket;	/* --cores-per-socket */
	uint16_t ntasks_per_socket;	/* --ntasks-per-socket */
};

/*
 * The decision. For GT_MODIFY every non-NULL string replaces the job's
 * field ("" clears it); min_nodes/max_nodes/segment_size replace the job's
 * when > 0.
 * The strings live in the result's own block: never free() them alone.
 */
struct gt_result {
	int action;			/* enum gt_action */
	int log_level;			/* enum gt_log_level */
	char *log;			/* one line for slurmctld's log */
	char *err_msg;			/* for the user: GT_REJECT's reason; with
					 * GT_KEEP/GT_MODIFY a note that sbatch,
					 * salloc and srun print as info */
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
	char *background;		/* messages of the background snapshot
					 * reload since the last answer, one per
					 * line ('\n'-separated), or NULL */
	uint32_t segment_size;		/* ABI 5: --segment when > 0 (Slurm
					 * 24.05+ with topology/block; a shim
					 * built for an older Slurm logs and
					 * ignores it) */
};

/* One message on either pipe. */
struct gt_msg {
	uint64_t seq;			/* the shim's request number, echoed */
	void *ptr;			/* request: struct gt_job; answer: struct gt_result */
};

/*
 * What the shim needs to decide about a job when libgangtopo does not
 * answer in time: gangtopo.yaml's deadline, on_failure and scope. One
 * immutable block per configuration generation, published by libgangtopo
 * through the pointer gt_init was given (an atomic store; the shim loads it
 * with acquire). Old blocks are freed only by gt_init and gt_fini.
 */
struct gt_params {
	uint32_t deadline_us;
	uint32_t fail_closed;		/* on_failure: closed */
	uint32_t jobs_gpu;		/* jobs: gpu (every GPU job is in scope) */
	const char *partitions;		/* comma-separated; "" = every partition */
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
 * /etc/slurm/gangtopo.yaml when NULL) and the topology, starts the
 * background snapshot reload and the goroutine that answers on resp_fd
 * what it reads on req_fd (both fds become libgangtopo's, see above), and
 * stores the current struct gt_params into *params. When the configuration
 * (or the cluster file it names) does not load, gt_init still returns GT_OK
 * with *err set to a malloc()ed message: *params stays NULL (jobs pass
 * unchanged, the shim does not ask), and libgangtopo keeps watching both
 * files, publishing *params once an edit loads, so a fix takes effect
 * without restarting slurmctld. On GT_ERR (an internal failure) *err holds a
 * malloc()ed message and the fds are closed. *background (when background
 * is not NULL) gets what the first snapshot load reported, as
 * gt_result.background, or NULL. A second call replaces the first
 * (reconfigure), as gt_fini then gt_init would.
 */
int gt_init(const char *config_path, int req_fd, int resp_fd, struct gt_params **params,
	    char **err, char **background);

/*
 * gt_fini stops the answering goroutine and the background reload, closes
 * libgangtopo's pipe ends and stores NULL into *params.
 */
void gt_fini(void);

#endif /* GT_ABI_NO_PROTOTYPES */

/* gt_result_release releases an answer: one block, strings included. */
static inline void gt_result_release(struct gt_result *res)
{
	free(res);
}

#endif
