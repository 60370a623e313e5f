/*
 * gangtopo_channel.h - the shim's side of the pipe protocol of
 * gangtopo_abi.h: make the pipes, pack a job, send it, wait for its answer
 * (discarding late answers to earlier requests), drain at the end. No
 * Slurm, no Go: c/tests drive it against a fake server.
 */
#ifndef GANGTOPO_CHANNEL_H
#define GANGTOPO_CHANNEL_H

#include <stdint.h>

#include "gangtopo_abi.h"

/* What gt_channel_call returns besides GT_OK. */
enum gt_channel_err {
	GT_CH_UNAVAILABLE = -2,	/* the request could not be sent, or the server is gone */
	GT_CH_TIMEOUT = -3,	/* no answer in time */
};

struct gt_channel {
	int req_w;		/* request pipe, write end; -1: closed */
	int resp_r;		/* response pipe, read end */
	uint64_t seq;		/* the last request's number */
	uint64_t late;		/* late answers discarded so far */
	/* late_hook gets each late answer before it is released (logging). */
	void (*late_hook)(const struct gt_result *res, uint64_t seq);
};

/*
 * gt_channel_open makes both pipes (O_CLOEXEC, O_NONBLOCK on every end) and
 * returns the server's ends in *req_r and *resp_w. 0 or -1 (errno set).
 */
int gt_channel_open(struct gt_channel *ch, int *req_r, int *resp_w);

/* gt_channel_is_open says whether requests can be sent. */
int gt_channel_is_open(const struct gt_channel *ch);

/*
 * gt_job_pack copies a job and every string it points to into one
 * malloc()ed block (struct gt_job first, its strings after), or NULL.
 */
struct gt_job *gt_job_pack(const struct gt_job *job);

/*
 * gt_channel_call sends job (a gt_job_pack block, which it always takes
 * over: freed here when it could not be sent, the server's otherwise) and
 * waits up to timeout_ms for the answer to it. GT_OK with *res set (release
 * it with gt_result_release), GT_CH_UNAVAILABLE or GT_CH_TIMEOUT.
 */
int gt_channel_call(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res);

/*
 * gt_channel_close reads what is left in the response pipe (after the
 * server closed its ends: to the end), releases it and closes the shim's
 * ends.
 */
void gt_channel_close(struct gt_channel *ch);

#endif
