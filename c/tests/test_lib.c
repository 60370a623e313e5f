/*
 * test_lib.c - the pipe protocol end to end against the real libgangtopo,
 * built with the fault hooks (make plugins-fault), without Slurm: answers,
 * a call that outlives the shim's timeout (a job named
 * gangtopo-inject-hang stalls Go for a second), its late answer discarded
 * by the next call, gt_fini while a late answer is still being made, and
 * a second gt_init, and the ABI 6 fields that say how Slurm counts a
 * job's resources reaching the decision. Built with AddressSanitizer by make c-test: Go frees
 * the job blocks and the shim the answers, so a block freed twice, used
 * after its free, or never freed fails the test.
 *
 * usage: test_lib TOPOLOGY.yaml
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../gangtopo_channel.h"
#include "check.h"

int gt_abi_version(void);
int gt_init(const char *config_path, int req_fd, int resp_fd, struct gt_params **params, char **err,
	    char **background);
void gt_fini(void);


static struct gt_params *params;
static struct gt_channel ch;

static void start(const char *config)
{
	char *err = NULL, *bg = NULL;
	int req_r, resp_w;

	CHECK(gt_channel_open(&ch, &req_r, &resp_w) == 0, "pipes");
	CHECK(gt_init(config, req_r, resp_w, &params, &err, &bg) == GT_OK, "gt_init: %s", err ? err : "");
	free(err);
	free(bg);
}

static void stop(void)
{
	gt_fini();
	gt_channel_close(&ch);
	CHECK(params == NULL, "gt_fini leaves the parameters published");
}

static int call(const char *name, int timeout_ms, char *log, size_t len)
{
	struct gt_job j = { .user_id = 1000, .name = name, .partition = "gpu", .tres_per_job = "gres:gpu:8" };
	struct gt_result *res = NULL;
	int rc = gt_channel_call(&ch, gt_job_pack(&j), timeout_ms, &res);

	snprintf(log, len, "%s", res && res->log ? res->log : "");
	gt_result_release(res);
	return rc;
}

/* call_modify sends a user's update of a job's features (job_modify). */
static int call_modify(const char *id, const char *features, char *log, size_t len)
{
	struct gt_job j = { .request = GT_REQ_MODIFY, .user_id = 1000, .job_id = id, .features = features,
			    .changes = GT_CHANGE_FEATURES };
	struct gt_result *res = NULL;
	int rc = gt_channel_call(&ch, gt_job_pack(&j), 2000, &res);

	snprintf(log, len, "%s", res && res->log ? res->log : "");
	CHECK(!res || (res->action == GT_KEEP && !res->features), "update without a snapshot changed the job");
	gt_result_release(res);
	return rc;
}

/* write_idle_snapshot writes a snapshot of lab16 with every node idle, taken now. */
static void write_idle_snapshot(const char *path)
{
	char stamp[32];
	time_t now = time(NULL);
	FILE *f = fopen(path, "w");

	CHECK(f, "cannot write %s", path);
	if (!f)
		return;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "{\"version\": \"v1\", \"cluster\": \"lab16\", \"generation\": 1, \"time\": \"%s\", \"nodes\": [", stamp);
	for (int i = 1; i <= 16; i++)
		fprintf(f, "%s{\"name\": \"node%02d\", \"state\": \"idle\"}", i > 1 ? ", " : "", i);
	fprintf(f, "], \"jobs\": []}\n");
	fclose(f);
}

/*
 * decide_counting sends a CPU-only job of 65 one-CPU tasks on one 64-CPU
 * node of lab16, edited by the caller, and returns the answer's action
 * with its log line in log.
 */
static int decide_counting(void (*edit)(struct gt_job *), char *log, size_t len)
{
	struct gt_job j = { .user_id = 1000, .name = "count", .partition = "gpu", .min_nodes = 1, .max_nodes = 1,
			    .num_tasks = 65, .min_cpus = 65 };
	struct gt_result *res = NULL;
	int action = -1;

	if (edit)
		edit(&j);
	if (gt_channel_call(&ch, gt_job_pack(&j), 2000, &res) == GT_OK && res)
		action = res->action;
	snprintf(log, len, "%s", res && res->log ? res->log : "");
	gt_result_release(res);
	return action;
}

static void overcommit(struct gt_job *j) { j->overcommit = 1, j->min_cpus = 1; }
static void user_exclusive(struct gt_job *j) { j->shared = GT_SHARED_USER, j->num_tasks = 1, j->min_cpus = 1; }
static void two_threads(struct gt_job *j) { j->threads_per_core = 2, j->num_tasks = 1, j->min_cpus = 1; }
static void per_node(struct gt_job *j) { j->pn_min_cpus = 65, j->num_tasks = 1, j->min_cpus = 1; }

/*
 * test_counting: the fields of ABI 6 reach the decision, under jobs: all:
 * 65 tasks on one 64-CPU node are refused as Slurm refuses them, passed
 * with --overcommit (issue 22), and so on.
 */
static void test_counting(const char *topology, const char *dir)
{
	char config[128], snap[128], log[512];
	FILE *f;

	snprintf(config, sizeof(config), "%s/counting.yaml", dir);
	snprintf(snap, sizeof(snap), "%s/snapshot.json", dir);
	write_idle_snapshot(snap);
	f = fopen(config, "w");
	fprintf(f, "version: v1\ntopology: %s\nsnapshot: %s\njobs: all\nmax_snapshot_age: 1h\ndeadline: 500ms\n", topology, snap);
	fclose(f);
	start(config);
	CHECK(decide_counting(NULL, log, sizeof(log)) == GT_REJECT && strstr(log, "can ever hold a CPU-only job of 65 CPUs"),
	      "-N 1 -n 65: %s", log);
	CHECK(decide_counting(overcommit, log, sizeof(log)) == GT_MODIFY && strstr(log, "untouched cause=unsupported") &&
	      strstr(log, "--overcommit"), "-N 1 -n 65 --overcommit: %s", log);
	CHECK(decide_counting(user_exclusive, log, sizeof(log)) == GT_MODIFY && strstr(log, "--exclusive=user"),
	      "--exclusive=user: %s", log);
	CHECK(decide_counting(two_threads, log, sizeof(log)) == GT_MODIFY && strstr(log, "--threads-per-core"),
	      "--threads-per-core=2: %s", log);
	CHECK(decide_counting(per_node, log, sizeof(log)) == GT_REJECT, "--mincpus=65: %s", log);
	stop();
	unlink(config);
	unlink(snap);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/gangtopo-test-lib-XXXXXX", config[128], log[512];
	FILE *f;

	if (argc != 2 || !mkdtemp(dir)) {
		fprintf(stderr, "usage: test_lib TOPOLOGY.yaml\n");
		return 2;
	}
	CHECK(gt_abi_version() == GT_ABI_VERSION, "ABI %d", gt_abi_version());
	snprintf(config, sizeof(config), "%s/gangtopo.yaml", dir);
	f = fopen(config, "w");
	/* no snapshot file: every GPU job is answered "untouched" at once */
	fprintf(f, "version: v1\ntopology: %s\nsnapshot: %s/none.json\njobs: gpu\ndeadline: 100ms\n", argv[1], dir);
	fclose(f);

	start(config);
	CHECK(params && params->deadline_us == 100000 && params->jobs_gpu && !params->fail_closed &&
	      params->partitions && !*params->partitions, "published parameters");
	CHECK(call("plain", 2000, log, sizeof(log)) == GT_OK && strstr(log, "gangtopo v1 untouched"), "plain: %s", log);
	CHECK(call_modify("123_4", "", log, sizeof(log)) == GT_OK &&
	      strstr(log, "update of job 123_4 by uid 1000 passes as given: no snapshot loaded"), "update: %s", log);
	CHECK(call("gangtopo-inject-hang", 150, log, sizeof(log)) == GT_CH_TIMEOUT, "hang: no timeout");
	usleep(1200 * 1000);
	CHECK(call("after", 2000, log, sizeof(log)) == GT_OK && strstr(log, "\"after\""), "after: %s", log);
	CHECK(ch.late == 1, "late answers discarded: %llu, want 1", (unsigned long long)ch.late);
	/* stop while Go still stalls on a request: it frees the job and its answer */
	CHECK(call("gangtopo-inject-hang", 50, log, sizeof(log)) == GT_CH_TIMEOUT, "second hang: no timeout");
	stop();

	start(config);	/* reconfigure */
	CHECK(call("again", 2000, log, sizeof(log)) == GT_OK && strstr(log, "\"again\""), "again: %s", log);
	stop();
	usleep(1200 * 1000);	/* the stalled call ends and cleans up */

	/* a configuration broken at start: no parameters (jobs pass), and the
	 * fixed file is loaded without another gt_init */
	f = fopen(config, "w");
	fprintf(f, "version: v1\ntopology: %s\nsnapshot: %s/none.json\njobs: everything\n", argv[1], dir);
	fclose(f);
	{
		char *err = NULL, *bg = NULL;
		int req_r, resp_w, waited = 0;

		CHECK(gt_channel_open(&ch, &req_r, &resp_w) == 0, "pipes");
		CHECK(gt_init(config, req_r, resp_w, &params, &err, &bg) == GT_OK && err && strstr(err, "everything") &&
		      !params, "broken configuration: err %s, params %p", err ? err : "(none)", (void *)params);
		free(err);
		free(bg);
		f = fopen(config, "w");
		fprintf(f, "version: v1\ntopology: %s\nsnapshot: %s/none.json\njobs: gpu\n", argv[1], dir);
		fclose(f);
		while (!__atomic_load_n(&params, __ATOMIC_ACQUIRE) && waited++ < 50)
			usleep(100 * 1000);
		CHECK(params && params->jobs_gpu, "the fixed configuration was not published after %d ms", waited * 100);
		CHECK(call("fixed", 2000, log, sizeof(log)) == GT_OK && strstr(log, "\"fixed\""), "fixed: %s", log);
		stop();
	}

	test_counting(argv[1], dir);
	unlink(config);
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("test_lib: ok\n");
	return 0;
}
