/*
 * job_submit_gangtopo.c - job_submit/gangtopo: ask gangtopo's placement
 * engine (libgangtopo.so, Go) where a GPU gang should go, and rewrite the
 * job so that Slurm's own scheduler carries it out.
 *
 * This shim is the only code built against a particular Slurm release
 * (job_desc_msg_t changes between release series). It copies the fields
 * gangtopo reads into struct gt_job, calls gt_submit, logs the one line it
 * returns, and applies the result with Slurm's allocator (slurm_xstrdup /
 * slurm_xfree, exported by libslurmfull but declared in no public header).
 * Everything else, including every failure policy, lives in Go.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "gangtopo_abi.h"

const char plugin_name[] = "gangtopo: topology-aware GPU gang placement";
const char plugin_type[] = "job_submit/gangtopo";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* libslurmfull's allocator; strings in job_desc must come from it. */
extern char *slurm_xstrdup(const char *str);
extern void slurm_xfree(void **ptr);
extern void slurm_info(const char *fmt, ...);
extern void slurm_error(const char *fmt, ...);
extern void slurm_debug(const char *fmt, ...);

#define GT_CONTROL_PREFIX "GANG_TOPOLOGY="

static const char *spank_value(const job_desc_msg_t *jd)
{
	for (uint32_t i = 0; jd->spank_job_env && i < jd->spank_job_env_size; i++) {
		const char *kv = jd->spank_job_env[i];

		if (kv && !strncmp(kv, GT_CONTROL_PREFIX, strlen(GT_CONTROL_PREFIX)))
			return kv + strlen(GT_CONTROL_PREFIX);
	}
	return NULL;
}

static uint32_t u32(uint32_t v) { return v == NO_VAL || v == INFINITE ? 0 : v; }
static uint16_t u16(uint16_t v) { return v == NO_VAL16 || v == INFINITE16 ? 0 : v; }

static void copy_job(const job_desc_msg_t *jd, uint32_t uid, struct gt_job *j)
{
	memset(j, 0, sizeof(*j));
	j->user_id = uid;
	j->name = jd->name;
	j->partition = jd->partition;
	j->gang_topology = spank_value(jd);
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
	j->min_nodes = u32(jd->min_nodes);
	j->max_nodes = u32(jd->max_nodes);
	j->num_tasks = u32(jd->num_tasks);
	j->ntasks_per_node = u16(jd->ntasks_per_node);
	j->cpus_per_task = u16(jd->cpus_per_task);
	j->min_cpus = u32(jd->min_cpus);
	j->pn_min_memory = jd->pn_min_memory == NO_VAL64 ? 0 : jd->pn_min_memory;
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

static void apply(job_desc_msg_t *jd, const struct gt_result *r)
{
	replace(&jd->features, r->features);
	replace(&jd->prefer, r->prefer);
	replace(&jd->req_nodes, r->req_nodes);
	replace(&jd->exc_nodes, r->exc_nodes);
	replace(&jd->tres_per_job, r->tres_per_job);
	replace(&jd->tres_per_node, r->tres_per_node);
	replace(&jd->comment, r->comment);
	replace(&jd->admin_comment, r->admin_comment);
	if (r->min_nodes)
		jd->min_nodes = r->min_nodes;
	if (r->max_nodes)
		jd->max_nodes = r->max_nodes;
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

/* log_background logs what the snapshot reload reported since the last call. */
static void log_background(void)
{
	char *msg;

	for (int i = 0; i < 64 && (msg = gt_poll_log()); i++) {
		slurm_info("%s: %s", plugin_type, msg);
		free(msg);
	}
}

int init(void)
{
	char *err = NULL;

	if (gt_abi_version() != GT_ABI_VERSION) {
		slurm_error("%s: libgangtopo.so speaks ABI %d, this plugin %d: rebuild both (make plugins)",
			    plugin_type, gt_abi_version(), GT_ABI_VERSION);
		return SLURM_ERROR;
	}
	if (gt_init(NULL, &err) != GT_OK) {
		/* fail open: a broken configuration must not stop slurmctld */
		slurm_error("%s: %s; jobs pass unchanged", plugin_type, err ? err : "init failed");
		free(err);
		return SLURM_SUCCESS;
	}
	slurm_info("%s: loaded", plugin_type);
	log_background();
	return SLURM_SUCCESS;
}

int fini(void)
{
	gt_fini();
	return SLURM_SUCCESS;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
	struct gt_job job;
	struct gt_result res;
	int rc = SLURM_SUCCESS;

	log_background();
	copy_job(job_desc, submit_uid, &job);
	memset(&res, 0, sizeof(res));
	(void)gt_submit(&job, &res);
	log_result(&res);
	if (res.action == GT_REJECT) {
		if (err_msg && res.err_msg)
			*err_msg = slurm_xstrdup(res.err_msg);
		rc = ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE;
	} else if (res.action == GT_MODIFY) {
		apply(job_desc, &res);
	}
	gt_result_free(&res);
	return rc;
}

extern int job_modify(job_desc_msg_t *job_desc, void *job_ptr, uint32_t submit_uid, char **err_msg)
{
	(void)job_desc;
	(void)job_ptr;
	(void)submit_uid;
	(void)err_msg;
	return SLURM_SUCCESS;
}
