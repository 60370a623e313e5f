package docs

// Who runs a documented command.
const (
	// Unit: TestDocumentedCommands, here, in the repository with gangtopo
	// built and on PATH (build/gangtopo is that binary); no Slurm.
	Unit = "unit"
	// Itself: no test runs the line; Why says what does (make test is
	// what CI runs; make bench-* rewrite the benchmarks).
	Itself = "itself"
)

// Entry is one documented command line and how it is run. By is Unit,
// Itself, or the name of the end-to-end test (tests/e2e, registered under
// that name) that runs exactly this line against the lab, the lab's paths
// and job IDs put in.
type Entry struct {
	File, Cmd string
	By        string
	Why       string // Itself: what runs it instead; else a note
	// Unit: Replace pairs (old, new) put the repository's saved inputs
	// and $TMP (a temporary directory) in; Extra is appended (the saved
	// Slurm outputs for commands that read Slurm); Exit is the exit
	// status wanted (place with no room now: 1).
	Replace []string
	Extra   string
	Exit    int
}

// saved lab16 state with pending gang 24, saved from the e2e lab
// (cmd/gangtopo/testdata/defrag): what defrag, why and frag --pending read
// instead of asking Slurm, at the moment it was saved
const savedDefrag = " --topology docs/examples/lab16.yaml --config cmd/gangtopo/testdata/defrag/gangtopo.yaml" +
	" --sinfo-json cmd/gangtopo/testdata/defrag/sinfo.json --squeue-json cmd/gangtopo/testdata/defrag/squeue.json --now 2026-12-03T22:07:53Z"

// Registry is every command line of README.md and docs/*.md.
var Registry = []Entry{
	// README.md
	{File: "README.md", Cmd: "make demo", By: "MakeDemo"},
	{File: "README.md", Cmd: "make test", By: Itself, Why: "make test is the test run: CI runs exactly it (.ci/run)"},
	{File: "README.md", Cmd: "make build", By: Unit, Extra: " BUILD=$TMP/build"},
	{File: "README.md", Cmd: "build/gangtopo place --topology docs/examples/lab16.yaml --state docs/examples/lab16-snapshot.json --gpus 32 --gang-topology leaf --explain", By: Unit, Exit: 1},
	{File: "README.md", Cmd: "build/gangtopo frag --topology docs/examples/lab16.yaml --state docs/examples/lab16-snapshot.json", By: Unit},
	{File: "README.md", Cmd: "build/gangtopo defrag --topology docs/examples/lab16.yaml --state docs/examples/lab16-snapshot.json --gpus 32 --gang-topology leaf", By: Unit},
	{File: "README.md", Cmd: "build/gangtopo defrag apply --job 1234", By: "DefragApply"},
	{File: "README.md", Cmd: "build/gangtopo defrag apply --job 1234 --yes", By: "DefragApply"},
	{File: "README.md", Cmd: "build/gangtopo why 1234", By: "DefragApply"},
	{File: "README.md", Cmd: "build/gangtopo simulate -w default,gpushare40 -p FGD,slurm,gangtopo,gangtopo-slurm --seeds 42-44 --svg sim.svg", By: Unit,
		Replace: []string{"sim.svg", "$TMP/sim.svg"}},
	{File: "README.md", Cmd: "build/gangtopo replay --topology docs/examples/dgx-h100-256.yaml --from 2017-10-09 --to 2017-10-16 --peak-load 0.9,1,1.1 --svg replay.svg --html replay.html", By: Unit,
		Replace: []string{"replay.svg", "$TMP/replay.svg", "replay.html", "$TMP/replay.html"}},
	{File: "README.md", Cmd: "sbatch --gpus=32 --gang-topology=leaf train.sh", By: "DocumentedCommands"},
	{File: "README.md", Cmd: "sbatch --gpus=h100:16 --gang-topology=nvlink:preferred train.sh", By: "DocumentedCommands"},
	{File: "README.md", Cmd: "sbatch --gpus=32 --gang-topology=leaf,slice=8 train.sh", By: "DocumentedCommands"},

	// docs/admin.md: "Deploying on a cluster", every command in order
	{File: "docs/admin.md", Cmd: "make build plugins", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "make install PREFIX=/usr/local SLURM_PLUGIN_DIR=/usr/lib/x86_64-linux-gnu/slurm-wlm", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo discover --node-name node01 > node01.json", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo topology build --node-maps . --topology-conf /etc/slurm/topology.conf --name lab16 --partition gpu -o cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "install -D -m 0644 cluster.yaml /etc/gangtopo/cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo topology hash /etc/gangtopo/cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo gen gres --topology /etc/gangtopo/cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo gen features --topology /etc/gangtopo/cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo gen topology --topology /etc/gangtopo/cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo daemon --role node --once --node-name node01 --node-file-dir /var/lib/gangtopo/nodes --topology /etc/gangtopo/cluster.yaml", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "install -d -m 0755 /var/lib/gangtopo", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo daemon --role controller --once --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "scontrol reconfigure", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "sbatch --gpus=16 --gang-topology=leaf --wrap 'sleep 60'", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo why JOBID", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "scontrol reconfigure", By: "DeployingOnACluster", Why: "the off switch"},
	{File: "docs/admin.md", Cmd: "gangtopo unbind", By: "DeployingOnACluster"},
	{File: "docs/admin.md", Cmd: "gangtopo unbind --clear", By: "DeployingOnACluster"},
	// the Debian package: make e2e-sid runs make deb; the test installs it
	// with dpkg -i, as written, inside the sid root (on the host it would
	// replace the plugins the lab has loaded)
	{File: "docs/admin.md", Cmd: "make deb", By: "DebianPackageInstallsAndPlaces", Why: "make e2e-sid runs make deb for the test"},
	{File: "docs/admin.md", Cmd: "dpkg -i build/deb/gangtopo_*+slurm22.05.8_amd64.deb", By: "DebianPackageInstallsAndPlaces",
		Why: "the test runs dpkg -i on the 22.05.8 package inside the sid root, where it is refused, then on the 26.05.5 one"},
	{File: "docs/admin.md", Cmd: "dpkg -i gangtopo_VERSION+slurmRELEASE_amd64.deb", By: "DebianPackageUpgradeAsDocumented"},
	{File: "docs/admin.md", Cmd: "gangtopo version", By: "DebianPackageUpgradeAsDocumented"},
	{File: "docs/admin.md", Cmd: "scontrol reconfigure", By: "DebianPackageUpgradeAsDocumented"},
	{File: "docs/admin.md", Cmd: "scontrol reconfigure", By: "DebianPackageRemoveAsDocumented"},
	{File: "docs/admin.md", Cmd: "gangtopo unbind --clear", By: "DebianPackageRemoveAsDocumented"},
	{File: "docs/admin.md", Cmd: "dpkg -r gangtopo", By: "DebianPackageRemoveAsDocumented"},
	{File: "docs/admin.md", Cmd: "dpkg -r gangtopo", By: "DebianPackageRemoveAsDocumented",
		Why: "the transcript of a removal refused while slurm.conf still loads the plugins: the test runs dpkg -r before the configuration is taken out"},
	{File: "docs/admin.md", Cmd: "gangtopo gen topology --topology /etc/gangtopo/cluster.yaml --plugin block -o /etc/slurm/topology.conf", By: Unit,
		Replace: []string{"/etc/gangtopo/cluster.yaml", "docs/examples/gb200-nvl72-8racks.yaml", "/etc/slurm/topology.conf", "$TMP/topology.conf"}},

	// docs/controller.md
	{File: "docs/controller.md", Cmd: "gangtopo snapshot --from-slurm --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json", By: "DocumentedCommands"},
	{File: "docs/controller.md", Cmd: "gangtopo daemon --role controller --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json --interval 5s --metrics-addr :9464", By: "DocumentedCommands"},

	// docs/defrag.md: the dry runs on saved Slurm outputs; what acts, in
	// the lab (DefragApply runs these lines, the lab's gang for 1234)
	{File: "docs/defrag.md", Cmd: "gangtopo defrag --job 1234", By: Unit, Replace: []string{"1234", "24"}, Extra: savedDefrag},
	{File: "docs/defrag.md", Cmd: "gangtopo defrag apply --job 1234", By: "DefragApply"},
	{File: "docs/defrag.md", Cmd: "gangtopo defrag apply --job 1234 --yes", By: "DefragApply"},
	{File: "docs/defrag.md", Cmd: "gangtopo defrag --job 1234 --save /tmp/plan-1234.json", By: "DefragApply"},
	{File: "docs/defrag.md", Cmd: "gangtopo defrag apply --plan /tmp/plan-1234.json --yes", By: "DefragApply"},
	{File: "docs/defrag.md", Cmd: "gangtopo frag --pending", By: Unit, Extra: savedDefrag},
	{File: "docs/defrag.md", Cmd: "gangtopo why 1234", By: Unit, Replace: []string{"1234", "24"},
		Extra: " --job-file cmd/gangtopo/testdata/defrag/job-24.txt" + savedDefrag},

	// docs/quota.md
	{File: "docs/quota.md", Cmd: "gangtopo daemon --role controller --config /etc/slurm/gangtopo.yaml --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json", By: "DocumentedCommands"},
	{File: "docs/quota.md", Cmd: "gangtopo quota off", By: Itself, Why: "tests/e2e/quota's TestQuotaOffPutsBack runs the section's commands in order on the quota lab (docsection.Commands)"},
	{File: "docs/quota.md", Cmd: "gangtopo quota off --yes", By: Itself, Why: "tests/e2e/quota's TestQuotaOffPutsBack, as above"},
	{File: "docs/quota.md", Cmd: "gangtopo quota off --yes", By: Itself, Why: "tests/e2e/quota's TestQuotaOffPutsBack, as above"},
	{File: "docs/quota.md", Cmd: "gangtopo quota --config cmd/gangtopo/testdata/quota/gangtopo.yaml --topology docs/examples/lab16.yaml --sinfo-json cmd/gangtopo/internal/slurmstate/testdata/quota_sinfo.json --squeue-json cmd/gangtopo/internal/slurmstate/testdata/quota_squeue.json", By: Unit},

	// docs/replay.md
	{File: "docs/replay.md", Cmd: "make bench-replay", By: Itself, Why: "make bench runs it, rewriting docs/benchmarks.md (the whole trace under every policy: about an hour here)"},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/dgx-h100-256.yaml --from 2017-10-09 --to 2017-10-16", By: Unit},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/dgx-h100-256.yaml --from 2017-10-09 --to 2017-10-16 --peak-load 1,1.1,1.2 --svg sweep.svg", By: Unit,
		Replace: []string{"sweep.svg", "$TMP/sweep.svg"}},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/hetero.yaml -o csv --policies gangtopo,slurm", By: Unit},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/lab16.yaml --trace my-philly.csv --from 2017-10-01 --to 2017-10-08", By: Unit,
		Replace: []string{"my-philly.csv", "../shared/data/traces/philly-via-pollux/philly.csv"}},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/dgx-h100-256.yaml --from 2017-10-09 --to 2017-10-12 --peak-load 1.15 --policies gangtopo-slurm,gangtopo-slurm+defrag", By: Unit},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/dgx-h100-256.yaml --from 2017-10-09 --to 2017-10-16 --slowdown grounded:central", By: Unit},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/lab16.yaml --trace cmd/gangtopo/testdata/replay/philly-small.csv --peak-load 0.8,1,1.2 --html replay.html", By: Unit,
		Replace: []string{"replay.html", "$TMP/replay.html"}},
	{File: "docs/replay.md", Cmd: "gangtopo replay --topology docs/examples/dgx-h100-256.yaml --sustain --quota accounts=15,shares=nodes --policies static,slurm+hard,gangtopo-slurm+quota+defrag", By: Itself,
		Why: "make bench-headline runs it on the whole trace at every band (long); TestSustainSmoke (cmd/gangtopo) runs the same search on the busiest fortnight"},
	{File: "docs/replay.md", Cmd: "sacct --json -a -S 2026-11-01 -E 2026-12-01 > history.json", By: Itself,
		Why: "needs a cluster with accounting: tests/e2e/quota/history_test.go dumps the quota lab's history with sacct --json on the host series; the captures of each series (cmd/gangtopo/internal/traces/testdata/sacct/README.md) were made so"},
	{File: "docs/replay.md", Cmd: "sacct -P -X -a -S 2026-11-01 -E 2026-12-01 --format=JobID,JobIDRaw,JobName,User,Account,Partition,QOS,State,Submit,Eligible,Start,End,Elapsed,Timelimit,ReqTRES,AllocTRES,ReqNodes,AllocNodes,NodeList,ReqCPUS,AllocCPUS,Flags,SubmitLine > history.txt", By: Itself,
		Why: "needs a cluster with accounting: the sacct -P captures of each series (cmd/gangtopo/internal/traces/testdata/sacct/README.md) were made with these fields"},
	{File: "docs/replay.md", Cmd: "scontrol show config > config.txt", By: Itself,
		Why: "needs a cluster: the captures' config.txt (cmd/gangtopo/internal/traces/testdata/sacct) were made so"},
	{File: "docs/replay.md", Cmd: "gangtopo replay --sacct history.json --scontrol-config config.txt --topology cluster.yaml", By: Unit,
		Replace: []string{"history.json", "cmd/gangtopo/internal/traces/testdata/sacct/slurm-22.05.8/sacct.json", "config.txt", "cmd/gangtopo/internal/traces/testdata/sacct/slurm-22.05.8/config.txt", "cluster.yaml", "docs/examples/lab16.yaml"}},
	{File: "docs/replay.md", Cmd: "gangtopo replay --sacct history.json --scontrol-config config.txt --topology cluster.yaml --check-starts", By: Unit,
		Replace: []string{"history.json", "cmd/gangtopo/internal/traces/testdata/sacct/slurm-22.05.8/sacct.json", "config.txt", "cmd/gangtopo/internal/traces/testdata/sacct/slurm-22.05.8/config.txt", "cluster.yaml", "docs/examples/lab16.yaml"}},

	// docs/simulate.md
	{File: "docs/simulate.md", Cmd: "make bench-simulate", By: Itself, Why: "make bench runs it, rewriting docs/benchmarks.md and docs/simulate.svg (minutes)"},
	{File: "docs/simulate.md", Cmd: "gangtopo simulate -w default,gpushare40 -p FGD,gangtopo --svg sim.svg", By: Unit,
		Replace: []string{"sim.svg", "$TMP/sim.svg"}},
	{File: "docs/simulate.md", Cmd: "gangtopo simulate -w multigpu50 --seeds 1-3 -o csv > multigpu50.csv", By: Unit,
		Replace: []string{"multigpu50.csv", "$TMP/multigpu50.csv"}},
	{File: "docs/simulate.md", Cmd: "gangtopo simulate -w default -p gangtopo,FGD --refuse-share 810", By: Unit},

	// docs/topology-tools.md
	{File: "docs/topology-tools.md", Cmd: "gangtopo daemon --role node --node-file-dir /var/lib/gangtopo/nodes --topology /etc/gangtopo/cluster.yaml --node-map-dir /shared/gangtopo/nodemaps --interval 1m", By: "DocumentedCommands"},
	{File: "docs/topology-tools.md", Cmd: "gangtopo topology build --node-maps /shared/gangtopo/nodemaps --topology-conf /etc/slurm/topology.conf --name prod --partition gpu -o /etc/gangtopo/cluster.yaml", By: Unit,
		Replace: []string{"/shared/gangtopo/nodemaps", "cmd/gangtopo/testdata/nodemaps", "/etc/slurm/topology.conf", "cmd/gangtopo/testdata/topology.conf", "/etc/gangtopo/cluster.yaml", "$TMP/cluster.yaml"}},
	{File: "docs/topology-tools.md", Cmd: "gangtopo topology build --node-maps DIR --ibnetdiscover fabric.txt -o cluster.yaml", By: Unit,
		Replace: []string{"DIR", "cmd/gangtopo/testdata/nodemaps", "fabric.txt", "tests/docs/testdata/fabric.txt", "cluster.yaml", "$TMP/cluster.yaml"}},
	{File: "docs/topology-tools.md", Cmd: "tests/gen/check-slurm.sh docs/examples/lab16.yaml", By: "DocumentedCommands"},

	// docs/user.md
	{File: "docs/user.md", Cmd: "sbatch --gpus=32 --gang-topology=leaf train.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "sbatch --gpus=h100:16 --gang-topology=nvlink:preferred train.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "sbatch --gpus=32 --gang-topology=leaf,slice=8 train.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "srun --gpus=8 --gang-topology=nvlink ./serve.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "salloc --gpus=16 --gang-topology=spine", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "gangtopo why 5 --topology /etc/gangtopo/cluster.yaml", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: `sbatch --comment="GANGTOPO_CHECKPOINT=sigterm" train.sh`, By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: `scontrol update JobId=$SLURM_JOB_ID Comment="GANGTOPO_CHECKPOINT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"`, By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "sbatch --gang-topology=nvlnk --gpus=8 train.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "sbatch --gang-topology=leaf --gpus=64 train.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "sbatch --gang-topology=block --gpus=8 train.sh", By: "DocumentedCommands"},
	{File: "docs/user.md", Cmd: "sbatch -p debug --gpus=8 --gang-topology=leaf train.sh", By: "DocumentedCommands"},
}

// For lists the registry's entries run by the named test, in document
// order.
func For(by string) []Entry {
	var out []Entry
	for _, e := range Registry {
		if e.By == by {
			out = append(out, e)
		}
	}
	return out
}
