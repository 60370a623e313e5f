package slurmlab

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// slurmConf is the lab's slurm.conf. It matches the stock reference runs
// (../shared/data/slurm-22.05-reference/conf/ref1) except for ports, paths,
// typed GPUs (gpu:h100:8, so --gpus=h100:16 works) and gangtopo's node
// features (gt_leafN, gt_spineN instead of leafN).
var slurmConf = template.Must(template.New("slurm.conf").Parse(`# written by tests/slurmlab for a throw-away lab in {{.Dir}}
ClusterName={{.Name}}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={{.Port}}
SlurmdPort={{.SlurmdPort}}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={{.Dir}}/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation={{.Dir}}/spool/ctld
SlurmdSpoolDir={{.Dir}}/spool/d/%n
SlurmctldPidFile={{.Dir}}/run/slurmctld.pid
SlurmdPidFile={{.Dir}}/run/slurmd-%n.pid
SlurmctldLogFile={{.Dir}}/log/slurmctld.log
SlurmdLogFile={{.Dir}}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PluginDir={{.PluginDir}}
PlugStackConfig={{.Dir}}/etc/plugstack.conf
{{- if .JobSubmit}}
JobSubmitPlugins=gangtopo
{{- end}}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
{{range .Accounting}}{{.}}
{{end -}}
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/{{.Topology}}
GresTypes=gpu
# trust slurm.conf for CPUs and memory: the host is small (SLURM-LAB.md)
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=300
SlurmctldTimeout=300
InactiveLimit=0
MinJobAge={{.MinJobAge}}
KillWait=5
Waittime=0
{{- if .MaxJobCount}}
MaxJobCount={{.MaxJobCount}}
{{- end}}
{{- if .MaxArraySize}}
MaxArraySize={{.MaxArraySize}}
{{- end}}
{{range .Extra}}{{.}}
{{end}}{{range .Nodes}}{{.}}
{{end}}PartitionName=gpu Nodes={{.AllNodes}} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
{{range .Partitions}}{{.}}
{{end}}`))

type confData struct {
	Dir, Name, PluginDir, AllNodes string
	Topology                       string
	Port, SlurmdPort               int
	MaxJobCount, MaxArraySize      int
	MinJobAge                      int
	JobSubmit                      bool
	Nodes, Partitions              []string
	Accounting, Extra              []string
}

// clusterName is the lab's ClusterName (registered with slurmdbd when the
// lab has accounting).
const clusterName = "gtlab"

// writeConfig writes slurm.conf, gres.conf, topology.conf and
// plugstack.conf for the lab's cluster and plugins.
func (l *Lab) writeConfig() error {
	c := l.Cluster
	feats, err := jobsubmit.NodeFeatures(c, jobsubmit.DefaultFeaturePrefix)
	if err != nil {
		return err
	}
	d := confData{Dir: l.Dir, Name: clusterName, Port: l.Port, SlurmdPort: l.Port + 1,
		PluginDir: StockPluginDir, JobSubmit: l.opts.Plugins.JobSubmit, Partitions: l.opts.Partitions,
		Accounting: l.accountingConf(), Extra: l.opts.Extra, Topology: l.opts.Topology.Plugin,
		MaxJobCount: l.opts.MaxJobCount, MaxArraySize: l.opts.MaxArraySize, MinJobAge: 300}
	if l.opts.MinJobAge > 0 {
		d.MinJobAge = int(l.opts.MinJobAge / time.Second)
	}
	if d.Topology == "" {
		d.Topology = "tree"
	}
	topo := l.opts.Topology.Conf
	if topo == nil {
		topo = topologyConf(c)
	}
	plugins, err := l.pluginDir(l.opts.Plugins.Dir)
	if err != nil {
		return err
	}
	if plugins != "" {
		d.PluginDir += ":" + plugins // a colon list works (SLURM-LAB.md)
	}
	var names []string
	var gres bytes.Buffer
	gres.WriteString("AutoDetect=off\n")
	for i := range c.Nodes {
		n := &c.Nodes[i]
		names = append(names, n.Name)
		d.Nodes = append(d.Nodes, nodeLine(c, n, feats[i], l.Port+1+i))
		if n.NumGPUs() > 0 {
			fmt.Fprintf(&gres, "NodeName=%s Name=gpu Type=%s File=%s/dev/nvidia[0-%d]\n",
				n.Name, c.ModelName(c.GPUs[n.GPULo].Model), l.Dir, n.NumGPUs()-1)
		}
	}
	d.AllNodes = hostlist.Compress(names)
	var conf bytes.Buffer
	if err := slurmConf.Execute(&conf, d); err != nil {
		return err
	}
	files := map[string][]byte{
		"slurm.conf":     conf.Bytes(),
		"gres.conf":      gres.Bytes(),
		"topology.conf":  topo,
		"plugstack.conf": l.plugstack(plugins),
	}
	if l.Release.AtLeast(24, 5) {
		// 24.05's slurmd stops without a cgroup file system ("No
		// filesystem mounted on /sys/fs/cgroup") unless told not to use
		// one; the lab's nodes share the host's processes anyway
		files["cgroup.conf"] = []byte("CgroupPlugin=disabled\n")
	}
	if y := l.opts.Topology.YAML; y != nil {
		files["topology.yaml"] = y
	}
	for name, data := range files {
		// whole and renamed: a daemon reading it (a reconfigure, a new
		// step's slurmstepd) never sees half a file
		if err := writeAtomic(l.Path("etc", name), data); err != nil {
			return err
		}
	}
	return nil
}

// nodeLine is one NodeName line. NodeAddr and NodeHostname may not go on
// NodeName=DEFAULT (SLURM-LAB.md), so every node gets a full line.
func nodeLine(c *topology.Cluster, n *topology.Node, feats []string, port int) string {
	sockets, cores := 1, n.CPUs
	if n.CPUs%2 == 0 && n.CPUs >= 2 {
		sockets, cores = 2, n.CPUs/2
	}
	line := fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=localhost Port=%d CPUs=%d Boards=1 SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=1 RealMemory=%d State=UNKNOWN",
		n.Name, port, n.CPUs, sockets, cores, n.MemoryMiB)
	if n.NumGPUs() > 0 {
		line += fmt.Sprintf(" Gres=gpu:%s:%d", c.ModelName(c.GPUs[n.GPULo].Model), n.NumGPUs())
	}
	if len(feats) > 0 {
		line += " Feature=" + strings.Join(feats, ",")
	}
	return line
}

// topologyConf writes topology/tree switches: one per leaf (or block),
// one per spine, and a top switch over the spines (or the leaves).
func topologyConf(c *topology.Cluster) []byte {
	var b bytes.Buffer
	nodesOf := func(d *topology.Domain) string {
		var names []string
		for id := d.NodeLo; id < d.NodeHi; id++ {
			names = append(names, c.Nodes[id].Name)
		}
		return hostlist.Compress(names)
	}
	children := func(d *topology.Domain) string {
		var names []string
		for _, ch := range d.Children {
			names = append(names, c.Domains[ch].Name)
		}
		return strings.Join(names, ",")
	}
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine} {
		for _, id := range c.ByTier[t] {
			d := &c.Domains[id]
			if t == topology.TierBlock || len(d.Children) == 0 || c.Domains[d.Children[0]].Tier == topology.TierNode {
				fmt.Fprintf(&b, "SwitchName=%s Nodes=%s\n", d.Name, nodesOf(d))
			} else {
				fmt.Fprintf(&b, "SwitchName=%s Switches=%s\n", d.Name, children(d))
			}
		}
	}
	root := &c.Domains[0]
	if len(root.Children) > 1 {
		fmt.Fprintf(&b, "SwitchName=top Switches=%s\n", children(root))
	}
	return b.Bytes()
}

// plugstack is plugstack.conf, loading spank_gangtopo.so from dir (the
// lab's copy): empty for stock Slurm.
func (l *Lab) plugstack(dir string) []byte {
	p := l.opts.Plugins
	if !p.Spank || dir == "" {
		return nil
	}
	line := "required " + dir + "/spank_gangtopo.so nodefile_dir=" + l.Path("nodes")
	if len(p.SpankArgs) > 0 {
		line += " " + strings.Join(p.SpankArgs, " ")
	}
	return []byte(line + "\n")
}
