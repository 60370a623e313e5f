/*
 * gangtopo_slurm.h - what differs between the Slurm release series the
 * plugins build for, in one place.
 *
 * The plugins are built against one release's headers (make plugins reads
 * SLURM_VERSION_NUMBER from slurm_version.h) and load only into it:
 * Slurm's loader checks a job_submit plugin's plugin_version against its
 * own release down to the micro number, a SPANK plugin's down to the
 * series (src/common/plugin.c). Everything else the shims use is the same
 * in every series; what is not is switched here on SLURM_VERSION_NUMBER:
 *
 *  GT_SLURM_MODIFY_ERR_MSG  23.02: job_modify() gains char **err_msg
 *  GT_SLURM_TRES_SLASH      23.02: TRES strings in job_desc_msg_t read
 *                           "gres/gpu:8", not "gres:gpu:8"
 *  gt_hostlist_t            23.11: hostlist_t is the struct, not a pointer
 *  GT_SLURM_SEGMENT         24.05: job_desc_msg_t.segment_size (--segment)
 *  GT_JOB_DESC_ID(jd)       25.11: the job ID moves into step_id.job_id
 *
 * Series outside GT_SLURM_OLDEST..GT_SLURM_NEWEST are refused at build time:
 * job_desc_msg_t changes in every series, and a shim built against a
 * layout it was never checked with would read the wrong fields.
 */
#ifndef GANGTOPO_SLURM_H
#define GANGTOPO_SLURM_H

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>

#define GT_SLURM_OLDEST SLURM_VERSION_NUM(22, 5, 0)
#define GT_SLURM_NEWEST SLURM_VERSION_NUM(26, 5, 255)

#if SLURM_VERSION_NUMBER < GT_SLURM_OLDEST || SLURM_VERSION_NUMBER > GT_SLURM_NEWEST
#error "gangtopo: these Slurm headers are of a series gangtopo does not support (22.05 to 26.05; see docs/admin.md, 'Slurm series')"
#endif

#define GT_SLURM_AT_LEAST(a, b) (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(a, b, 0))

#define GT_SLURM_MODIFY_ERR_MSG GT_SLURM_AT_LEAST(23, 2)
#define GT_SLURM_TRES_SLASH GT_SLURM_AT_LEAST(23, 2)
#define GT_SLURM_SEGMENT GT_SLURM_AT_LEAST(24, 5)

#if GT_SLURM_AT_LEAST(23, 11)
typedef hostlist_t *gt_hostlist_t;
#else
typedef hostlist_t gt_hostlist_t;
#endif

#if GT_SLURM_AT_LEAST(25, 11)
#define GT_JOB_DESC_ID(jd) ((jd)->step_id.job_id)
#else
#define GT_JOB_DESC_ID(jd) ((jd)->job_id)
#endif

/* The release the plugins are built for, as "%d.%02d.%d" prints it. */
#define GT_SLURM_RELEASE_ARGS SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), \
	SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER)

#endif
