/*
 * job_submit_gangtopo.c - job_submit/gangtopo: ask gangtopo's placement
 * engine (libgangtopo.so, Go) where a GPU gang should go, and rewrite the
 * job so that Slurm's own scheduler carries it out.
 *
 * This shim is the only code built against a particular Slurm release
 * (job_desc_msg_t changes between release series; gangtopo_slurm.h
 * switches what differs). It copies the fields
 * gangtopo reads into struct gt_job, hands it to libgangtopo over a pipe
 * (gangtopo_channel.c; no call into Go per job, gangtopo_abi.h says why),
 * logs the line the answer carries, and applies it with Slurm's allocator
 * (slurm_xstrdup / slurm_xfree, exported by libslurmfull but declared in no
 * public header). The decisions and their failure policy live in Go; the
 * shim decides alone only when no answer comes within the deadline, and
 * then as on_failure says.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "gangtopo_abi.h"
#include "gangtopo_slurm.h"
#include "gangtopo_channel.h"
#include "gangtopo_quote.h"
#include "gangtopo_scope.h"

const char plugin_name[] = "gangtopo: topology-aware GPU gang placement";
const char plugin_type[] = "job_submit/gangtopo";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* libslurmfull's allocator; strings in job_desc must come from it. */
extern char *slurm_xstrdup(const char *str);
extern void slurm_xfree(void **ptr);
extern void slurm_info(const char *fmt, ...);
extern void slurm_error(const char *fmt, ...);
extern void slurm_debug(const char *fmt, ...);

#define GT_CONTROL_VAR "GANG_TOPOLOGY"
#define GT_SOURCE_VAR "GANG_TOPOLOGY_SOURCE"	/* "environment": a default, see spank_client.c */

/*
 * slurmctld's default partition, where Slurm puts a job submitted without
 * -p (src/slurmctld/partition_mgr.c; slurmctld exports its symbols to
 * plugins). job_submit runs with the partition read lock held, and
 * reconfigure replaces the name under the write lock, so reading it here is
 * safe. Weak: a process without it (the C tests) sees NULL.
 */
extern char *default_part_name __attribute__((weak));

/*
 * The pipes to libgangtopo, and what it published for deciding alone.
 * slurmctld serialises job_submit, init and fini; the lock keeps the
 * protocol's one-request-at-a-time rule (and params alive) should a
 * release stop doing so.
 */
static pthread_mutex_t chan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gt_channel chan = { .req_w = -1, .resp_r = -1 };
static struct gt_params *params;

/* spank_value finds NAME=value in the job's SPANK control environment. */
static const char *spank_value(const job_desc_msg_t *jd, const char *name)
{
	size_t len = strlen(name);

	for (uint32_t i = 0; jd->spank_job_env && i < jd->spank_job_env_size; i++) {
		const char *kv = jd->spank_job_env[i];

		if (kv && !strncmp(kv, name, len) && kv[len] == '=')
			return kv + len + 1;
	}
	return NULL;
}

static const char *default_partition(void)
{
	return &default_part_name ? default_part_name : NULL;
}

static uint32_t u32(uint32_t v) { return v == NO_VAL || v == INFINITE ? 0 : v; }
static uint16_t u16(uint16_t v) { return v == NO_VAL16 || v == INFINITE16 ? 0 : v; }

/* shared_of maps job_desc's shared to enum gt_shared. */
static uint32_t shared_of(uint16_t shared)
{
	switch (shared) {
	case NO_VAL16:
		return GT_SHARED_DEFAULT;
	case JOB_SHARED_NONE:
		return GT_SHARED_EXCLUSIVE;
	case JOB_SHARED_OK:
		return GT_SHARED_OVERSUBSCRIBE;
	case JOB_SHARED_USER:
		return GT_SHARED_USER;
	case JOB_SHARED_MCS:
		return GT_SHARED_MCS;
#ifdef JOB_SHARED_TOPO
	case JOB_SHARED_TOPO:
		return GT_SHARED_TOPO;
#endif
	}
	return GT_SHARED_OTHER;
}

/* copy_counting copies what changes how Slurm counts the job (ABI 6). */
static void copy_counting(const job_desc_msg_t *jd, struct gt_job *j)
{
	j->overcommit = jd->overcommit != NO_VAL8 && jd->overcommit;
	j->shared = shared_of(jd->shared);
	j->mem_whole_node = jd->pn_min_memory == 0;	/* --mem=0; not given is NO_VAL64 */
	j->contiguous = jd->contiguous != NO_VAL16 && jd->contiguous;
	j->spread_job = (jd->bitflags & SPREAD_JOB) != 0;
	j->req_switch = u32(jd->req_switch);
	j->pn_min_cpus = u16(jd->pn_min_cpus);
	j->ntasks_per_tres = u16(jd->ntasks_per_tres);
	j->threads_per_core = u16(jd->threads_per_core);
	j->ntasks_per_core = u16(jd->ntasks_per_core);
	j->sockets_per_node = u16(jd->sockets_per_node);
	j->cores_per_socket = u16(jd->cores_per_socket);
	j->ntasks_per_socket = u16(jd->ntasks_per_socket);
}

static void copy_job(const job_desc_msg_t *jd, uint32_t uid, struct gt_job *j)
{
	memset(j, 0, sizeof(*j));
	j->user_id = uid;
	j->name = jd->name;
	j->partition = jd->partition;
	j->default_partition = default_partition();
	j->gang_topology = spank_value(jd, GT_CONTROL_VAR);
	if (j->gang_topology) {
		const char *src = spank_value(jd, GT_SOURCE_VAR);

		j->gang_topology_from_env = src && !strcmp(src, "environment");
	}
	j->tres_per_job = jd->tres_per_job;
	j->tres_per_node = jd->tres_per_node;
	j->tres_per_socket = jd->tres_per_socket;
	j->tres_per_task = jd->tres_per_task;
	j->cpus_per_tres = jd->cpus_per_tres;
	j->mem_per_tres = jd->mem_per_tres;
	j->features = jd->features;
	j->prefer = jd->prefer;
	j->req_nodes = jd->req_nodes;
	j->exc_nodes = jd->exc_nodes;
	j->comment = jd->comment;
	j->admin_comment = jd->admin_comment;
	j->min_nodes = u32(jd->min_nodes);
	j->max_nodes = u32(jd->max_nodes);
	j->num_tasks = u32(jd->num_tasks);
	j->ntasks_per_node = u16(jd->ntasks_per_node);
	j->cpus_per_task = u16(jd->cpus_per_task);
	j->min_cpus = u32(jd->min_cpus);
	j->pn_min_memory = jd->pn_min_memory == NO_VAL64 ? 0 : jd->pn_min_memory;
	j->array_inx = jd->array_inx;
	j->het_job = jd->het_job_offset != NO_VAL;	/* job_submit runs once per component */
	j->het_job_offset = j->het_job ? jd->het_job_offset : 0;
#if GT_SLURM_SEGMENT
	j->segment_size = u16(jd->segment_size);
#endif
	copy_counting(jd, j);
}

/* replace sets *field to a Slurm-allocated copy of value ("" clears it). */
static void replace(char **field, const char *value)
{
	if (!value)
		return;
	slurm_xfree((void **)field);
	if (*value)
		*field = slurm_xstrdup(value);
}

/*
 * replace_tres is replace for a TRES list the decision writes in 22.05's
 * form ("gres:gpu:8,gres:nic:1"): from 23.02 on job_desc_msg_t holds
 * "gres/gpu:8" and slurmctld refuses the old form ("Invalid Trackable
 * RESource (TRES) specification"), so each item's "gres:" becomes "gres/".
 */
static void replace_tres(char **field, const char *value)
{
#if GT_SLURM_TRES_SLASH
	char *copy, *p;

	if (!value || !*value) {
		replace(field, value);
		return;
	}
	copy = slurm_xstrdup(value);
	for (p = copy; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, "gres:", 5))
			p[4] = '/';
	}
	slurm_xfree((void **)field);
	*field = copy;
#else
	replace(field, value);
#endif
}

/*
 * apply_segment sets --segment (slurm_topology: block). A Slurm without
 * segment_size (before 24.05) cannot take it: said once, then ignored; the
 * features binding still holds the gang to its domains.
 */
static void apply_segment(job_desc_msg_t *jd, uint32_t segment)
{
#if GT_SLURM_SEGMENT
	if (segment)
		jd->segment_size = segment > UINT16_MAX ? UINT16_MAX : (uint16_t)segment;
#else
	static int said;

	(void)jd;
	if (segment && !said) {
		said = 1;
		slurm_error("%s: gangtopo.yaml says slurm_topology: block, but this Slurm (%d.%02d.%d) has no --segment (24.05+); the segment is not set",
			    plugin_type, GT_SLURM_RELEASE_ARGS);
	}
#endif
}

static void apply(job_desc_msg_t *jd, const struct gt_result *r)
{
	replace(&jd->features, r->features);
	replace(&jd->prefer, r->prefer);
	replace(&jd->req_nodes, r->req_nodes);
	replace(&jd->exc_nodes, r->exc_nodes);
	replace_tres(&jd->tres_per_job, r->tres_per_job);
	replace_tres(&jd->tres_per_node, r->tres_per_node);
	replace(&jd->comment, r->comment);
	replace(&jd->admin_comment, r->admin_comment);
	if (r->min_nodes)
		jd->min_nodes = r->min_nodes;
	if (r->max_nodes)
		jd->max_nodes = r->max_nodes;
	apply_segment(jd, r->segment_size);
}

static void log_result(const struct gt_result *r)
{
	if (!r->log)
		return;
	switch (r->log_level) {
	case GT_LOG_ERROR:
		slurm_error("%s: %s", plugin_type, r->log);
		break;
	case GT_LOG_INFO:
		slurm_info("%s: %s", plugin_type, r->log);
		break;
	case GT_LOG_DEBUG:
		slurm_debug("%s: %s", plugin_type, r->log);
		break;
	}
}

/*
 * log_background logs what the snapshot reload reported (lines separated
 * by '\n'), each as its own line, on slurmctld's thread.
 */
static void log_background(const char *msgs)
{
	while (msgs && *msgs) {
		size_t len = strcspn(msgs, "\n");

		slurm_info("%s: %.*s", plugin_type, (int)len, msgs);
		msgs += len + (msgs[len] == '\n');
	}
}

/* log_late logs what a late answer carried; its decision was not applied. */
static void log_late(const struct gt_result *r, uint64_t seq)
{
	log_background(r->background);
	if (r->log)
		slurm_info("%s: answer %" PRIu64 " came after its deadline and was not applied: %s",
			   plugin_type, seq, r->log);
}

/*
 * log_breaker logs the breaker's episodes (gangtopo_channel.h): once when
 * it opens, once when an answer closes it; the jobs in between get one
 * debug line each.
 */
static void log_breaker(int open, unsigned misses, uint64_t skipped)
{
	if (open)
		slurm_error("%s: no answer from libgangtopo for %u submissions in a row: not asking it for %ds at a "
			    "time (jobs follow on_failure without waiting) until it answers again",
			    plugin_type, misses, GT_BREAKER_OPEN_MS / 1000);
	else
		slurm_info("%s: libgangtopo answers again, after %u submissions without an answer and %" PRIu64
			   " decided without asking", plugin_type, misses, skipped);
}

static void channel_close(void)
{
	gt_fini();	/* libgangtopo's ends first: nothing writes into a closed pipe */
	gt_channel_close(&chan);
}

static int init_locked(void)
{
	char *err = NULL, *background = NULL;
	int req_r, resp_w;

	if (gt_abi_version() != GT_ABI_VERSION) {
		slurm_error("%s: libgangtopo.so speaks ABI %d, this plugin %d: rebuild both (make plugins)",
			    plugin_type, gt_abi_version(), GT_ABI_VERSION);
		return SLURM_ERROR;
	}
	if (gt_channel_is_open(&chan))
		channel_close();
	if (gt_channel_open(&chan, &req_r, &resp_w) < 0) {
		slurm_error("%s: pipe: %s; jobs pass unchanged", plugin_type, strerror(errno));
		return SLURM_SUCCESS;
	}
	chan.late_hook = log_late;
	chan.breaker_hook = log_breaker;
	if (gt_init(NULL, req_r, resp_w, &params, &err, &background) != GT_OK) {
		/* fail open: an internal failure must not stop slurmctld */
		slurm_error("%s: %s; jobs pass unchanged", plugin_type, err ? err : "init failed");
		free(err);
		free(background);
		gt_channel_close(&chan);
		return SLURM_SUCCESS;
	}
	if (err)	/* the configuration did not load: libgangtopo watches it */
		slurm_error("%s: %s", plugin_type, err);
	else
		slurm_info("%s: loaded, built for Slurm %d.%02d.%d", plugin_type, GT_SLURM_RELEASE_ARGS);
	free(err);
	log_background(background);
	free(background);
	return SLURM_SUCCESS;
}

int init(void)
{
	int rc;

	pthread_mutex_lock(&chan_lock);
	rc = init_locked();
	pthread_mutex_unlock(&chan_lock);
	return rc;
}

int fini(void)
{
	pthread_mutex_lock(&chan_lock);
	if (gt_channel_is_open(&chan))
		channel_close();
	pthread_mutex_unlock(&chan_lock);
	return SLURM_SUCCESS;
}

/*
 * no_answer follows on_failure for a job libgangtopo did not answer about
 * in time (or could not be asked about), with the line and the message Go
 * gives for its own failures (Gate.failure). quiet: the breaker is open,
 * which was logged once; the job's line goes to the debug level.
 */
static int no_answer(const struct gt_job *j, const struct gt_params *p, const char *why, int quiet, char **err_msg)
{
	void (*logf)(const char *, ...) = quiet ? slurm_debug : slurm_error;
	char msg[320], name[160];

	gt_quote(j->name, name, sizeof(name));	/* the user's text: no forged log lines */
	if (p->fail_closed && gt_in_scope(j, p)) {
		logf("%s: job %s of uid %u: gangtopo v1 refused: %s", plugin_type, name, j->user_id, why);
		snprintf(msg, sizeof(msg), "gangtopo: placement is unavailable (%s); on_failure is closed, so the job "
			 "was not submitted: try again later or ask your administrator", why);
		if (err_msg)
			*err_msg = slurm_xstrdup(msg);
		return ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE;
	}
	logf("%s: job %s of uid %u: gangtopo v1 untouched: %s", plugin_type, name, j->user_id, why);
	return SLURM_SUCCESS;
}

/*
 * tell_user hands msg to the user through *err_msg: the reason of a
 * refusal, or a note sbatch/salloc/srun print on success. An earlier
 * job_submit plugin's message is kept, ours goes on the next line.
 */
static void tell_user(char **err_msg, const char *msg)
{
	char *both;
	size_t len;

	if (!err_msg || !msg || !*msg)
		return;
	if (!*err_msg) {
		*err_msg = slurm_xstrdup(msg);
		return;
	}
	len = strlen(*err_msg) + strlen(msg) + 2;
	both = malloc(len);
	if (!both)
		return;	/* keep the earlier message */
	snprintf(both, len, "%s\n%s", *err_msg, msg);
	slurm_xfree((void **)err_msg);
	*err_msg = slurm_xstrdup(both);
	free(both);
}

static int apply_answer(job_desc_msg_t *job_desc, const struct gt_result *res, char **err_msg)
{
	log_background(res->background);
	log_result(res);
	tell_user(err_msg, res->err_msg);
	if (res->action == GT_REJECT)
		return ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE;
	if (res->action == GT_MODIFY)
		apply(job_desc, res);
	return SLURM_SUCCESS;
}

static int submit_locked(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	const struct gt_params *p = __atomic_load_n(&params, __ATOMIC_ACQUIRE);
	struct gt_result *res = NULL;
	struct gt_job job, *block;
	char why[160];
	int rc, wait_ms, quiet = 0;

	if (!p || !gt_channel_is_open(&chan))
		return SLURM_SUCCESS;	/* not configured: init logged why; jobs pass */
	copy_job(job_desc, submit_uid, &job);
	block = gt_job_pack(&job);
	wait_ms = (int)((p->deadline_us + 999) / 1000) + GT_REPLY_MARGIN_MS;
	switch (block ? gt_channel_call(&chan, block, wait_ms, &res) : GT_CH_UNAVAILABLE) {
	case GT_OK:
		rc = apply_answer(job_desc, res, err_msg);
		gt_result_release(res);
		return rc;
	case GT_CH_TIMEOUT:
		snprintf(why, sizeof(why), "no answer within %dms (deadline %" PRIu32 "ms + %dms)", wait_ms,
			 (p->deadline_us + 999) / 1000, GT_REPLY_MARGIN_MS);
		break;
	case GT_CH_OPEN:
		snprintf(why, sizeof(why), "placement core not answering (not asked: %u submissions in a row got no answer)",
			 chan.misses);
		quiet = 1;
		break;
	default:
		snprintf(why, sizeof(why), "placement core unavailable (%s)",
			 block ? "not reading its requests" : "out of memory");
		break;
	}
	return no_answer(&job, p, why, quiet, err_msg);
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	int rc;

	pthread_mutex_lock(&chan_lock);
	rc = submit_locked(job_desc, submit_uid, err_msg);
	pthread_mutex_unlock(&chan_lock);
	return rc;
}

/*
 * job_modify keeps gangtopo's binding when a user's update sets a job's
 * features or excluded nodes, which would otherwise drop it: libgangtopo
 * looks the job up in the bindings the controller publishes with the
 * snapshot (the job's current fields are not readable here: job_ptr is
 * slurmctld's private record) and answers with the user's values plus
 * gangtopo's part (selector/jobsubmit/modify.go). Updates by root and by
 * slurmctld's own user (the controller's re-binding, `gangtopo unbind
 * --clear`) and updates of other fields pass without asking. Without an
 * answer in time the update passes as the user gave it, whatever
 * on_failure says: refusing users' updates while gangtopo is down would
 * be worse than a binding lost.
 *
 * Anyone's update: Slurm 22.05 calls job_modify before it checks that the
 * caller may update the job (24.11 and later check first), so any user can
 * send updates of any job through here, as fast as scontrol runs. Hence:
 *  - who owns the job is decided in Go, from the owner's uid the binding
 *    carries; an update by anyone else is answered at once, unread
 *    (jd->user_id is no help: 22.05 sets it to the owner's only when the
 *    update left it unset, so a crafted update can claim any owner);
 *  - every node list Go reads for an update is bounded as on submit;
 *  - an update is asked outside the breaker (gt_channel_ask): its
 *    timeouts do not count towards "placement core not answering", its
 *    answers do not close it, and while it is open updates are not sent,
 *    so an update can neither switch gangtopo off for submissions nor wait
 *    on a stalled Go side.
 */
static int modify_locked(job_desc_msg_t *jd, uint32_t uid, char **err_msg)
{
	const struct gt_params *p = __atomic_load_n(&params, __ATOMIC_ACQUIRE);
	struct gt_result *res = NULL;
	struct gt_job job, *block;
	char id[32];
	int rc, wait_ms;

	if (uid == 0 || uid == (uint32_t)geteuid() || (!jd->features && !jd->exc_nodes))
		return SLURM_SUCCESS;
	if (!p || !gt_channel_is_open(&chan))
		return SLURM_SUCCESS;
	memset(&job, 0, sizeof(job));
	job.request = GT_REQ_MODIFY;
	job.user_id = uid;
	job.job_id = jd->job_id_str;
	if (!job.job_id && GT_JOB_DESC_ID(jd) != NO_VAL) {
		snprintf(id, sizeof(id), "%u", GT_JOB_DESC_ID(jd));
		job.job_id = id;
	}
	job.changes = (jd->features ? GT_CHANGE_FEATURES : 0) | (jd->exc_nodes ? GT_CHANGE_EXC_NODES : 0);
	job.features = jd->features;
	job.exc_nodes = jd->exc_nodes;
	block = gt_job_pack(&job);
	wait_ms = (int)((p->deadline_us + 999) / 1000) + GT_REPLY_MARGIN_MS;
	rc = block ? gt_channel_ask(&chan, block, wait_ms, &res) : GT_CH_UNAVAILABLE;
	if (rc == GT_CH_OPEN) {
		slurm_debug("%s: update of job %s by uid %u passes as given: placement core not answering (not asked)",
			    plugin_type, job.job_id ? job.job_id : "?", uid);
		return SLURM_SUCCESS;
	}
	if (rc != GT_OK) {
		slurm_error("%s: update of job %s by uid %u passes as given: no answer from the placement core (%s)",
			    plugin_type, job.job_id ? job.job_id : "?", uid, rc == GT_CH_TIMEOUT ? "timeout" : "unavailable");
		return SLURM_SUCCESS;
	}
	rc = apply_answer(jd, res, err_msg);
	gt_result_release(res);
	return rc == ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE ? ESLURM_NOT_SUPPORTED : rc;
}

/* job_modify: slurmctld passes err_msg from 23.02 on (gangtopo_slurm.h). */
#if GT_SLURM_MODIFY_ERR_MSG
extern int job_modify(job_desc_msg_t *job_desc, void *job_ptr, uint32_t submit_uid, char **err_msg)
{
#else
extern int job_modify(job_desc_msg_t *job_desc, void *job_ptr, uint32_t submit_uid)
{
	char **err_msg = NULL;	/* 22.05 has no message for the user here: the log line says why */
#endif
	int rc;

	(void)job_ptr;
	pthread_mutex_lock(&chan_lock);
	rc = modify_locked(job_desc, submit_uid, err_msg);
	pthread_mutex_unlock(&chan_lock);
	return rc;
}
