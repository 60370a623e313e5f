/*
 * test_c.c - unit tests of the plugins' pure-C parts (make c-test): the
 * --gang-topology parser, the node file parser, the shim's scope check and
 * its quoting of job names for log lines. Table-driven; prints
 * each failure and exits 1 if any.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gangtopo_nodefile.h"
#include "../gangtopo_option.h"
#include "../gangtopo_quote.h"
#include "../gangtopo_scope.h"
#include "check.h"


static void test_option(void)
{
	static const struct {
		const char *in, *want;	/* want: canonical form, or error substring */
		int ok;
	} cases[] = {
		{ "leaf", "leaf:required", 1 },
		{ "LEAF:Preferred", "leaf:preferred", 1 },
		{ "nvlink,slice=8", "nvlink:required,slice=8", 1 },
		{ "spine:required,slice=4", "spine:required,slice=4", 1 },
		{ "cluster", "any:required", 1 },
		{ "node", "node:required", 1 },
		{ "block:preferred", "block:preferred", 1 },
		{ " any , slice = 4 ", "any:required,slice=4", 1 },
		{ "leaf,slice=576", "leaf:required,slice=576", 1 },
		{ "NVLNK", "unknown tier \"nvlnk\" (want one of nvlink, node, block, leaf, spine, any)", 0 },
		{ "", "empty value (want TIER[:MODE][,slice=S], e.g. leaf or nvlink:preferred,slice=8)", 0 },
		{ "leaf:sometimes", "unknown mode \"sometimes\" (want required or preferred)", 0 },
		{ "leaf:", "unknown mode \"\"", 0 },
		{ "leaf,slice=0", "slice=\"0\" is not a GPU count (want 1..576)", 0 },
		{ "leaf,slice=577", "slice=\"577\" is not a GPU count", 0 },
		{ "leaf,slice=99999999999999999999", "is not a GPU count", 0 },
		{ "leaf,slice=x", "slice=\"x\" is not a GPU count", 0 },
		{ "leaf,slice=", "slice=\"\" is not a GPU count", 0 },
		{ "leaf,slices=8", "unknown setting \"slices=8\" (the only setting is slice=S)", 0 },
		{ "leaf,slice=8,slice=4", "slice given twice", 0 },
		{ "leaf,", "unknown setting \"\"", 0 },
		{ "leaf:preferred:required", "unknown mode \"preferred:required\"", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gt_option o;
		char err[256] = "", got[128] = "";
		int rc = gt_option_parse(cases[i].in, &o, err, sizeof(err));

		if (rc == 0)
			gt_option_format(&o, got, sizeof(got));
		CHECK((rc == 0) == cases[i].ok, "option \"%s\": rc %d err \"%s\"", cases[i].in, rc, err);
		if (cases[i].ok)
			CHECK(!strcmp(got, cases[i].want), "option \"%s\": got \"%s\", want \"%s\"", cases[i].in, got, cases[i].want);
		else
			CHECK(strstr(err, cases[i].want) && !strncmp(err, "--gang-topology: ", 17),
			      "option \"%s\": error \"%s\" lacks \"%s\"", cases[i].in, err, cases[i].want);
	}
}

/* has_control says whether s holds an ASCII control byte. */
static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/*
 * Every refusal of the option parser, fed control characters where the
 * message names the user's words: the message must quote them (a newline
 * in a slurmd or slurmctld log line would forge a line).
 */
static void test_option_quotes(void)
{
	static const char *const in[] = {
		"le\naf", "leaf:\x1brequired", "leaf:pre\rferred", "leaf,colour\n=1", "leaf,\x1b", "leaf,slice=1\nFAKE",
		"leaf,slice=\x7f", "\x01\x02:\x03", "nvlink,slice=8\x01",
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct gt_option o;
		char err[256] = "";

		CHECK(gt_option_parse(in[i], &o, err, sizeof(err)) < 0, "option %zu: accepted", i);
		CHECK(!has_control(err) && strchr(err, '\\'), "option %zu: message not quoted: %s", i, err);
	}
}

static const char lab_node[] =
	"# written by gangtopo\n"
	"gangtopo-node v2\n"
	"node node01\n"
	"domain leaf leaf1\n"
	"members node[01-04]\n"
	"domain spine spine1\n"
	"members node[01-04]\n"
	"members node[05-08]   # a long list goes on a second line\n"
	"domain any lab16\n"
	"members node[01-16]\n"
	"nvlink node01/nvl0 0-7\n"
	"nic mlx5_0 0-1\n"
	"nic mlx5_1 2,3\n"
	"nic mlx5_2 4-5   # comment\n"
	"nic mlx5_3 6-7\n";

static void test_nodefile(void)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "", "empty file" },
		{ "gangtopo-node v3\nnode a\n", "line 1: want \"gangtopo-node v2\" (or v1) first" },
		{ "gangtopo-node v1\n", "no \"node\" line" },
		{ "gangtopo-node v1\nnode a\nnic mlx5_0 0-64\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v1\nnode a\nnic mlx5_0 3-1\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v1\nnode a\ncolour blue\n", "line 3: bad \"colour\" line" },
		{ "gangtopo-node v1\nnode a b\n", "line 2: bad \"node\" line" },
		{ "gangtopo-node v1\nnode a\nnic a 1 2 3\n", "line 3: too many fields" },
		/* names: NCCL_IB_HCA syntax, file names, environment values */
		{ "gangtopo-node v2\nnode a\nnic mlx5_0,mlx5_1 0\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v2\nnode a\nnic ^mlx5_0 0\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v2\nnode a\nnic mlx5_0:1 0\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v2\nnode a\nnic mlx5\x1b[2K 0\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v2\nnode ../etc\n", "line 2: bad \"node\" line" },
		{ "gangtopo-node v2\nnode .hidden\n", "line 2: bad \"node\" line" },
		{ "gangtopo-node v2\nnode a\ndomain LEAF l1\n", "line 3: bad \"domain\" line" },
		{ "gangtopo-node v2\nnode a\ndomain leaf l$1\n", "line 3: bad \"domain\" line" },
		{ "gangtopo-node v2\nnode a\nnvlink a/nvl\x01 0\n", "line 3: bad \"nvlink\" line" },
		/* members: v2 only, right after a domain, host list characters */
		{ "gangtopo-node v1\nnode a\ndomain leaf l1\nmembers a\n", "line 4: bad \"members\" line" },
		{ "gangtopo-node v2\nnode a\nmembers a\n", "line 3: bad \"members\" line" },
		{ "gangtopo-node v2\nnode a\ndomain leaf l1\nnvlink a/nvl0 0\nmembers a\n", "line 5: bad \"members\" line" },
		{ "gangtopo-node v2\nnode a\ndomain leaf l1\nmembers a;b\n", "line 4: bad \"members\" line" },
		{ "gangtopo-node v2\nnode a\ndomain leaf l1\nmembers a[1\nmembers 2]\n", "line 4: bad \"members\" line" },
		/* the file's words in an error are quoted */
		{ "gangtopo-node v2\nnode a\nbad\x1bword x\n", "line 3: bad \"bad\\x1bword\" line" },
	};
	static struct gt_nodefile nf;
	char err[512], nics[GT_NICS_MAX];
	uint64_t mask;

	CHECK(gt_nodefile_parse(lab_node, &nf, err, sizeof(err)) == 0, "lab node: %s", err);
	CHECK(!strcmp(nf.node, "node01") && nf.ndomains == 3 && nf.nnics == 4 && nf.nislands == 1,
	      "lab node: node %s, %d domains, %d nics, %d islands", nf.node, nf.ndomains, nf.nnics, nf.nislands);
	CHECK(!strcmp(nf.domains[0].tier, "leaf") && !strcmp(nf.domains[0].name, "leaf1"), "tightest domain first");
	CHECK(gt_domain_members(&nf, 0) && !strcmp(gt_domain_members(&nf, 0), "node[01-04]"), "leaf1 members %s",
	      gt_domain_members(&nf, 0));
	CHECK(gt_domain_members(&nf, 1) && !strcmp(gt_domain_members(&nf, 1), "node[01-04],node[05-08]"),
	      "spine1 members joined: %s", gt_domain_members(&nf, 1));
	CHECK(gt_domain_members(&nf, 2) && !strcmp(gt_domain_members(&nf, 2), "node[01-16]"), "any members %s",
	      gt_domain_members(&nf, 2));
	CHECK(nf.islands[0].gpus == 0xff, "island mask %llx", (unsigned long long)nf.islands[0].gpus);
	/* a v1 file still reads, without members */
	CHECK(gt_nodefile_parse("gangtopo-node v1\nnode a\ndomain leaf l1\n", &nf, err, sizeof(err)) == 0 &&
	      gt_domain_members(&nf, 0) == NULL, "v1 file: %s", err);
	CHECK(gt_nodefile_parse(lab_node, &nf, err, sizeof(err)) == 0, "lab node: %s", err);
	/* GPUs 2 and 5: mlx5_1 serves 2-3, mlx5_2 serves 4-5 */
	gt_gpu_mask("2,5", &mask);
	CHECK(gt_nics_for(&nf, mask, nics, sizeof(nics)) == 2 && !strcmp(nics, "mlx5_1,mlx5_2"), "nics for 2,5: %s", nics);
	/* no GPUs known: every NIC */
	CHECK(gt_nics_for(&nf, 0, nics, sizeof(nics)) == 4 && !strcmp(nics, "mlx5_0,mlx5_1,mlx5_2,mlx5_3"), "nics for none: %s", nics);
	/* a list that does not fit is not cut: no NIC rather than some */
	CHECK(gt_nics_for(&nf, 0, nics, 20) == -1 && nics[0] == '\0', "nics cut: %s", nics);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(gt_nodefile_parse(bad[i].text, &nf, err, sizeof(err)) < 0 && strstr(err, bad[i].err),
		      "bad file %zu: error \"%s\" lacks \"%s\"", i, err, bad[i].err);
		CHECK(!has_control(err), "bad file %zu: error holds a control byte: %s", i, err);
	}
	CHECK(gt_gpu_mask("", &mask) == 0 && mask == 0, "empty list");
	CHECK(gt_gpu_mask("1,", &mask) == 0 && mask == 2, "trailing comma");
	CHECK(gt_gpu_mask("a", &mask) < 0, "letters");
}

/* The full NIC list of a file at its limits fits GT_NICS_MAX. */
static void test_nics_max(void)
{
	static struct gt_nodefile nf;
	static char text[GT_NODEFILE_MAX], nics[GT_NICS_MAX];
	char err[256];
	int off = snprintf(text, sizeof(text), "gangtopo-node v2\nnode a\n");

	for (int i = 0; i < GT_MAX_NICS; i++)
		off += snprintf(text + off, sizeof(text) - (size_t)off, "nic %063d 0\n", i);
	CHECK(gt_nodefile_parse(text, &nf, err, sizeof(err)) == 0, "32 long NIC names: %s", err);
	CHECK(gt_nics_for(&nf, 1, nics, sizeof(nics)) == GT_MAX_NICS && strlen(nics) == GT_MAX_NICS * 63 + 31,
	      "32 long NIC names: %zu bytes", strlen(nics));
}

/* write_file writes text to dir/name with mode; returns the path (static). */
static const char *write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
	return path;
}

/*
 * The reader inside slurmstepd: what it refuses to open or trust, and how
 * it finds a node's file (%n). A FIFO must be refused at once, not hang.
 */
static void test_nodefile_open(void)
{
	static struct gt_nodefile nf;
	char dir[] = "/tmp/gangtopo-test-XXXXXX", sub[600], path[600], err[1024];
	static char big[GT_NODEFILE_MAX + 2];

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	write_file(dir, "node01", lab_node, 0644);
	CHECK(gt_nodefile_load(dir, "node01", &nf, err, sizeof(err)) == 0 && !strcmp(nf.node, "node01"), "plain: %s", err);
	/* %n: one directory per node (several slurmd on one host) */
	snprintf(sub, sizeof(sub), "%s/pernode", dir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/pernode/node01", dir);
	mkdir(sub, 0755);
	write_file(sub, "node01", lab_node, 0644);
	snprintf(path, sizeof(path), "%s/pernode/%%n", dir);
	CHECK(gt_nodefile_load(path, "node01", &nf, err, sizeof(err)) == 0, "%%n: %s", err);
	/* names that are not plain file names */
	CHECK(gt_nodefile_load(dir, "../node01", &nf, err, sizeof(err)) < 0 && strstr(err, "not a plain file name"),
	      "..: %s", err);
	CHECK(gt_nodefile_load(dir, "a/b", &nf, err, sizeof(err)) < 0 && strstr(err, "not a plain file name"), "/: %s", err);
	CHECK(gt_nodefile_load(dir, ".", &nf, err, sizeof(err)) < 0 && strstr(err, "not a plain file name"), ".: %s", err);
	CHECK(gt_nodefile_load(dir, "x\ny", &nf, err, sizeof(err)) < 0 && strstr(err, "\"x\\ny\"") && !has_control(err),
	      "newline: %s", err);
	/* another node's file under this node's name */
	write_file(dir, "node02", lab_node, 0644);
	CHECK(gt_nodefile_load(dir, "node02", &nf, err, sizeof(err)) < 0 && strstr(err, "names node01, not node02"),
	      "node line: %s", err);
	/* group-writable */
	write_file(dir, "node03", "gangtopo-node v2\nnode node03\n", 0664);
	CHECK(gt_nodefile_load(dir, "node03", &nf, err, sizeof(err)) < 0 && strstr(err, "writable by group or others"),
	      "0664: %s", err);
	/* a symbolic link, even to a good file */
	snprintf(path, sizeof(path), "%s/node04", dir);
	snprintf(sub, sizeof(sub), "%s/node01", dir);
	CHECK(symlink(sub, path) == 0, "symlink");
	CHECK(gt_nodefile_load(dir, "node04", &nf, err, sizeof(err)) < 0 && strstr(err, "symbolic link"), "symlink: %s", err);
	/* a FIFO: refused without waiting for a writer */
	snprintf(path, sizeof(path), "%s/node05", dir);
	CHECK(mkfifo(path, 0644) == 0, "mkfifo");
	CHECK(gt_nodefile_load(dir, "node05", &nf, err, sizeof(err)) < 0 && strstr(err, "not a regular file"), "fifo: %s", err);
	/* a directory */
	snprintf(path, sizeof(path), "%s/node06", dir);
	mkdir(path, 0755);
	CHECK(gt_nodefile_load(dir, "node06", &nf, err, sizeof(err)) < 0 && strstr(err, "not a regular file"), "dir: %s", err);
	/* too large */
	memset(big, '#', sizeof(big) - 1);
	write_file(dir, "node07", big, 0644);
	CHECK(gt_nodefile_load(dir, "node07", &nf, err, sizeof(err)) < 0 && strstr(err, "larger than 65536 bytes"),
	      "large: %s", err);
	/* owned by someone else (root only can make one) */
	if (geteuid() == 0) {
		const char *p = write_file(dir, "node08", "gangtopo-node v2\nnode node08\n", 0644);

		CHECK(chown(p, 12345, 12345) == 0, "chown");
		CHECK(gt_nodefile_load(dir, "node08", &nf, err, sizeof(err)) < 0 && strstr(err, "owned by uid 12345"),
		      "owner: %s", err);
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK(system(path) == 0, "cleanup");
}

/* unhex decodes a hex-encoded line (so that it may hold newlines) into raw (n bytes). */
static void unhex(const char *line, char *raw, size_t n)
{
	size_t k = 0;
	unsigned b;

	for (const char *p = line; p[0] && p[1] && k < n - 1 && sscanf(p, "%2x", &b) == 1; p += 2)
		raw[k++] = (char)b;
	raw[k] = '\0';
}

/*
 * parse_stdin serves the Go parity tests (spank/ctld): one value per line
 * in, hex-encoded, "ok CANONICAL" or "err MESSAGE" out.
 */
static int parse_stdin(void)
{
	char line[1024], raw[512];

	while (fgets(line, sizeof(line), stdin)) {
		struct gt_option o;
		char err[512], out[128];

		line[strcspn(line, "\n")] = '\0';
		unhex(line, raw, sizeof(raw));
		if (gt_option_parse(raw, &o, err, sizeof(err)) == 0) {
			gt_option_format(&o, out, sizeof(out));
			printf("ok %s\n", out);
		} else {
			printf("err %s\n", err + strlen("--gang-topology: "));
		}
	}
	return 0;
}

/*
 * quote_stdin serves spank/ctld's quoting parity test: one string a line in,
 * hex-encoded (so that it may hold newlines), gt_quote's output out.
 */
static int quote_stdin(void)
{
	char line[1024], raw[512], out[2048];

	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		unhex(line, raw, sizeof(raw));
		printf("%s\n", gt_quote(raw, out, sizeof(out)));
	}
	return 0;
}

/* Cutting: whole escapes only, and the result always fits. */
static void test_quote(void)
{
	static const struct {
		const char *in;
		size_t n;
		const char *want;
	} cases[] = {
		{ "a\nb\"c\\", 64, "\"a\\nb\\\"c\\\\\"" },
		{ NULL, 64, "\"\"" },
		{ "0123456789abc", 16, "\"0123456789abc\"" },
		{ "0123456789abcd", 16, "\"0123456789...\"" },
		{ "01234567\n\n\n", 16, "\"01234567\\n...\"" },
		{ "\x01\x01\x01", 8, "\"...\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];

		gt_quote(cases[i].in, out, cases[i].n);
		CHECK(!strcmp(out, cases[i].want) && strlen(out) < cases[i].n, "quote case %zu (n %zu): got %s, want %s",
		      i, cases[i].n, out, cases[i].want);
	}
}

/* dump_nodefile serves spank/nodefile's parity test: the parsed file, one fact a line. */
static int dump_nodefile(const char *path)
{
	static struct gt_nodefile nf;
	char err[1024];

	if (gt_nodefile_read(path, &nf, err, sizeof(err)) < 0) {
		printf("err %s\n", err);
		return 0;
	}
	printf("node %s\n", nf.node);
	for (int i = 0; i < nf.ndomains; i++)
		printf("domain %s %s %s\n", nf.domains[i].tier, nf.domains[i].name,
		       gt_domain_members(&nf, i) ? gt_domain_members(&nf, i) : "-");
	for (int i = 0; i < nf.nislands; i++)
		printf("nvlink %s %llx\n", nf.islands[i].name, (unsigned long long)nf.islands[i].gpus);
	for (int i = 0; i < nf.nnics; i++)
		printf("nic %s %llx\n", nf.nics[i].name, (unsigned long long)nf.nics[i].gpus);
	return 0;
}

/*
 * test_scope runs the cases of scope_cases.txt, which selector/jobsubmit's
 * TestScopeCases runs through Decider.scope: the shim and Go must agree.
 */
static void test_scope(const char *path)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	CHECK(f != NULL, "scope cases: cannot open %s", path);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *field[7], *s = line;
		int k = 0;

		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#' || !line[0])
			continue;
		for (; k < 7 && s; k++) {
			field[k] = s;
			if ((s = strchr(s, '|')))
				*s++ = 0;
		}
		CHECK(k == 7 && !s, "%s: \"%s\" does not have 7 fields", path, line);
		if (k != 7)
			continue;
		struct gt_job j = { .partition = strcmp(field[1], "-") ? field[1] : NULL,
				    .default_partition = strcmp(field[2], "-") ? field[2] : NULL,
				    .gang_topology = field[3], .tres_per_job = field[4] };
		struct gt_params p = { .partitions = field[0], .jobs_gpu = field[5][0] == '1' };
		int got = gt_in_scope(&j, &p), want = field[6][0] == '1';

		CHECK(got == want, "%s: partitions \"%s\", job in \"%s\" (default \"%s\"), --gang-topology \"%s\", tres \"%s\", jobs_gpu %s: got %d, want %d",
		      path, field[0], field[1], field[2], field[3], field[4], field[5], got, want);
		n++;
	}
	fclose(f);
	CHECK(n > 10, "%s: only %d cases", path, n);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--parse"))
		return parse_stdin();
	if (argc == 2 && !strcmp(argv[1], "--quote"))
		return quote_stdin();
	if (argc == 3 && !strcmp(argv[1], "--nodefile"))
		return dump_nodefile(argv[2]);
	test_option();
	test_option_quotes();
	test_nodefile();
	test_nics_max();
	test_nodefile_open();
	test_scope(argc == 2 ? argv[1] : "c/tests/scope_cases.txt");
	test_quote();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("c tests: ok\n");
	return 0;
}
