/*
 * test_c.c - unit tests of the plugins' pure-C parts (make c-test): the
 * --gang-topology parser, the node file parser, the shim's scope check and
 * its quoting of job names for log lines. Table-driven; prints
 * each failure and exits 1 if any.
 */
#include <stdio.h>
#include <string.h>

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
	"gangtopo-node v1\n"
	"node node01\n"
	"domain leaf leaf1\n"
	"domain spine spine1\n"
	"domain any lab16\n"
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
		{ "gangtopo-node v2\nnode a\n", "line 1: want \"gangtopo-node v1\" first" },
		{ "gangtopo-node v1\n", "no \"node\" line" },
		{ "gangtopo-node v1\nnode a\nnic mlx5_0 0-64\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v1\nnode a\nnic mlx5_0 3-1\n", "line 3: bad \"nic\" line" },
		{ "gangtopo-node v1\nnode a\ncolour blue\n", "line 3: bad \"colour\" line" },
		{ "gangtopo-node v1\nnode a b\n", "line 2: bad \"node\" line" },
		{ "gangtopo-node v1\nnode a\nnic a 1 2 3\n", "line 3: too many fields" },
	};
	struct gt_nodefile nf;
	char err[256], nics[256];
	uint64_t mask;

	CHECK(gt_nodefile_parse(lab_node, &nf, err, sizeof(err)) == 0, "lab node: %s", err);
	CHECK(!strcmp(nf.node, "node01") && nf.ndomains == 3 && nf.nnics == 4 && nf.nislands == 1,
	      "lab node: node %s, %d domains, %d nics, %d islands", nf.node, nf.ndomains, nf.nnics, nf.nislands);
	CHECK(!strcmp(nf.domains[0].tier, "leaf") && !strcmp(nf.domains[0].name, "leaf1"), "tightest domain first");
	CHECK(nf.islands[0].gpus == 0xff, "island mask %llx", (unsigned long long)nf.islands[0].gpus);
	/* GPUs 2 and 5: mlx5_1 serves 2-3, mlx5_2 serves 4-5 */
	gt_gpu_mask("2,5", &mask);
	CHECK(gt_nics_for(&nf, mask, nics, sizeof(nics)) == 2 && !strcmp(nics, "mlx5_1,mlx5_2"), "nics for 2,5: %s", nics);
	/* no GPUs known: every NIC */
	CHECK(gt_nics_for(&nf, 0, nics, sizeof(nics)) == 4 && !strcmp(nics, "mlx5_0,mlx5_1,mlx5_2,mlx5_3"), "nics for none: %s", nics);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(gt_nodefile_parse(bad[i].text, &nf, err, sizeof(err)) < 0 && strstr(err, bad[i].err),
		      "bad file %zu: error \"%s\" lacks \"%s\"", i, err, bad[i].err);
	}
	CHECK(gt_gpu_mask("", &mask) == 0 && mask == 0, "empty list");
	CHECK(gt_gpu_mask("1,", &mask) == 0 && mask == 2, "trailing comma");
	CHECK(gt_gpu_mask("a", &mask) < 0, "letters");
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
	struct gt_nodefile nf;
	char err[512];

	if (gt_nodefile_read(path, &nf, err, sizeof(err)) < 0) {
		printf("err %s\n", err);
		return 0;
	}
	printf("node %s\n", nf.node);
	for (int i = 0; i < nf.ndomains; i++)
		printf("domain %s %s\n", nf.domains[i].tier, nf.domains[i].name);
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
		char *field[6], *s = line;
		int k = 0;

		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#' || !line[0])
			continue;
		for (; k < 6 && s; k++) {
			field[k] = s;
			if ((s = strchr(s, '|')))
				*s++ = 0;
		}
		CHECK(k == 6 && !s, "%s: \"%s\" does not have 6 fields", path, line);
		if (k != 6)
			continue;
		struct gt_job j = { .partition = strcmp(field[1], "-") ? field[1] : NULL, .gang_topology = field[2],
				    .tres_per_job = field[3] };
		struct gt_params p = { .partitions = field[0], .jobs_gpu = field[4][0] == '1' };
		int got = gt_in_scope(&j, &p), want = field[5][0] == '1';

		CHECK(got == want, "%s: partitions \"%s\", job in \"%s\", --gang-topology \"%s\", tres \"%s\", jobs_gpu %s: got %d, want %d",
		      path, field[0], field[1], field[2], field[3], field[4], got, want);
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
	test_scope(argc == 2 ? argv[1] : "c/tests/scope_cases.txt");
	test_quote();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("c tests: ok\n");
	return 0;
}
