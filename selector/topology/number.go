package topology

import "fmt"

// number is phase 3 and 4 of Build: it creates the domains depth-first,
// numbering nodes and GPUs as it goes, then derives each node's islands.
func (b *builder) number() {
	c := b.c
	c.nodeByName = map[string]NodeID{}
	c.domainByName = map[string]DomainID{}
	c.modelByName = map[string]ModelID{}
	c.partByName = map[string]int{}
	gpus := 0
	for i := range b.spec.Nodes {
		gpus += len(b.spec.Nodes[i].GPUs)
	}
	c.Nodes = make([]Node, 0, len(b.spec.Nodes))
	c.GPUs = make([]GPU, 0, gpus)
	c.Domains = make([]Domain, 0, 2*len(b.spec.Nodes)+gpus/4+64)

	root := b.newDomain(b.spec.Name, TierCluster, NoDomain)
	if len(b.spec.Spines) == 0 {
		for _, l := range b.spec.Leaves {
			b.addLeaf(l, root)
		}
	}
	for _, s := range b.spec.Spines {
		sid := b.newDomain(s.Name, TierSpine, root)
		b.c.Domains[sid].Oversubscription = max(s.Oversubscription, 1)
		for _, l := range s.Leaves {
			b.addLeaf(l, sid)
		}
		b.close(sid)
	}
	b.close(root)
}

func (b *builder) newDomain(name string, t Tier, parent DomainID) DomainID {
	c := b.c
	id := DomainID(len(c.Domains))
	c.Domains = append(c.Domains, Domain{
		ID: id, Name: name, Tier: t, Parent: parent,
		NodeLo: NodeID(len(c.Nodes)), GPULo: GPUID(len(c.GPUs)),
	})
	if parent != NoDomain {
		c.Domains[parent].Children = append(c.Domains[parent].Children, id)
	}
	if t != TierNVLink {
		c.domainByName[name] = id
	}
	c.ByTier[t] = append(c.ByTier[t], id)
	return id
}

// close records the end of a domain's node and GPU ranges.
func (b *builder) close(id DomainID) {
	d := &b.c.Domains[id]
	d.NodeHi = NodeID(len(b.c.Nodes))
	d.GPUHi = GPUID(len(b.c.GPUs))
}

func (b *builder) addLeaf(l LeafSpec, parent DomainID) {
	lid := b.newDomain(l.Name, TierLeaf, parent)
	b.c.Domains[lid].Oversubscription = max(l.Oversubscription, 1)
	for _, name := range l.Nodes {
		b.addNode(name, lid)
	}
	for _, bl := range l.Blocks {
		bid := b.newDomain(bl.Name, TierBlock, lid)
		b.c.Domains[bid].NVLink = bl.NVLink
		for _, name := range bl.Nodes {
			b.addNode(name, bid)
		}
		b.close(bid)
	}
	b.close(lid)
}

func (b *builder) addNode(name string, parent DomainID) {
	c := b.c
	ns := &b.spec.Nodes[b.nodeSpec[name]]
	nid := NodeID(len(c.Nodes))
	did := b.newDomain(name, TierNode, parent)
	n := Node{
		ID: nid, Name: name, Hardware: ns.Hardware, CPUs: ns.CPUs, ThreadsPerCore: max(ns.ThreadsPerCore, 1), MemoryMiB: ns.MemoryMiB,
		Features: append([]string(nil), ns.Features...), Weight: ns.Weight,
		Order: b.nodeSpec[name], GPULo: GPUID(len(c.GPUs)),
	}
	for _, p := range ns.Partitions {
		n.Partitions = append(n.Partitions, b.partition(p))
	}
	for i := range n.Up {
		n.Up[i] = NoDomain
	}
	for d := did; d != NoDomain; d = c.Domains[d].Parent {
		n.Up[c.Domains[d].Tier] = d
	}
	c.nodeByName[name] = nid
	for i, g := range ns.GPUs {
		m := b.model(g.Model, ns.At)
		n.Models = n.Models.With(m)
		c.GPUs = append(c.GPUs, GPU{
			ID: GPUID(len(c.GPUs)), Node: nid, Index: i, Model: m, MemoryMiB: g.MemoryMiB,
			PCIBusID: g.PCIBusID, NUMA: g.NUMA, PCIeSwitch: g.PCIeSwitch, Island: NoDomain,
		})
	}
	n.GPUHi = GPUID(len(c.GPUs))
	n.links = flattenLinks(ns.Links, len(ns.GPUs))
	n.Speeds, n.SpeedsAssumed = resolveSpeeds(ns)
	for _, nic := range ns.NICs {
		n.NICs = append(n.NICs, NIC{
			Name: nic.Name, NetDev: nic.NetDev, PCIBusID: nic.PCIBusID, NUMA: nic.NUMA,
			PCIeSwitch: nic.PCIeSwitch, LinkLayer: nic.LinkLayer, RateGbps: nic.RateGbps,
			GPUs: append([]int(nil), nic.GPUs...),
		})
	}
	c.Nodes = append(c.Nodes, n)
	b.close(did)
	b.addIslands(nid, did)
	b.nearestNICs(nid)
}

func (b *builder) partition(name string) int {
	if i, ok := b.c.partByName[name]; ok {
		return i
	}
	b.c.partByName[name] = len(b.c.Partitions)
	b.c.Partitions = append(b.c.Partitions, name)
	return len(b.c.Partitions) - 1
}

func (b *builder) model(name, at string) ModelID {
	key := CanonicalModel(name)
	if m, ok := b.c.modelByName[key]; ok {
		return m
	}
	if len(b.c.Models) == MaxModels {
		b.errorf(at, "more than %d distinct GPU models in one cluster", MaxModels)
		return 0
	}
	m := ModelID(len(b.c.Models))
	b.c.modelByName[key] = m
	b.c.Models = append(b.c.Models, key)
	return m
}

func flattenLinks(links [][]int, k int) []uint8 {
	out := make([]uint8, k*k)
	for i := range links {
		for j := range links[i] {
			if i != j {
				out[i*k+j] = uint8(links[i][j])
			}
		}
	}
	return out
}

// addIslands derives the node's NVLink islands: the connected components of
// its link graph, found by a union-find over GPU pairs with at least one
// link. A GPU without NVLink is an island of one.
func (b *builder) addIslands(nid NodeID, nodeDomain DomainID) {
	c := b.c
	n := &c.Nodes[nid]
	k := n.NumGPUs()
	parent := make([]int, k)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			if n.Links(i, j) > 0 {
				parent[find(i)] = find(j)
			}
		}
	}
	islandOf := map[int]DomainID{}
	for i := 0; i < k; i++ {
		r := find(i)
		id, ok := islandOf[r]
		if !ok {
			id = b.newDomain(fmt.Sprintf("%s/nvl%d", n.Name, len(islandOf)), TierNVLink, nodeDomain)
			d := &c.Domains[id]
			d.NodeLo, d.NodeHi = nid, nid+1
			islandOf[r] = id
			n = &c.Nodes[nid]
			n.Islands = append(n.Islands, id)
		}
		d := &c.Domains[id]
		d.IslandGPUs = append(d.IslandGPUs, n.GPU(i))
		d.NVLink = len(d.IslandGPUs) > 1
		c.GPUs[n.GPU(i)].Island = id
	}
	for _, id := range n.Islands {
		d := &c.Domains[id]
		d.GPULo, d.GPUHi = d.IslandGPUs[0], d.IslandGPUs[len(d.IslandGPUs)-1]+1
	}
}

// nearestNICs fills GPU.NICs: the NICs that declare the GPU, else those on
// the same PCIe switch, else those on the same NUMA node.
func (b *builder) nearestNICs(nid NodeID) {
	n := &b.c.Nodes[nid]
	for i := 0; i < n.NumGPUs(); i++ {
		g := &b.c.GPUs[n.GPU(i)]
		var declared, sameSwitch, sameNUMA []int
		for ni, nic := range n.NICs {
			switch {
			case containsInt(nic.GPUs, i):
				declared = append(declared, ni)
			case nic.PCIeSwitch >= 0 && nic.PCIeSwitch == g.PCIeSwitch && g.PCIeSwitch >= 0:
				sameSwitch = append(sameSwitch, ni)
			case nic.NUMA >= 0 && nic.NUMA == g.NUMA:
				sameNUMA = append(sameNUMA, ni)
			}
		}
		switch {
		case len(declared) > 0:
			g.NICs = declared
		case len(sameSwitch) > 0:
			g.NICs = sameSwitch
		default:
			g.NICs = sameNUMA
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
