package topology

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxNodes bounds the size of one cluster (the largest GPU clusters known
// today have about 25,000 nodes).
const MaxNodes = 1 << 16

// Build checks a Spec and turns it into a Cluster.
//
// Phases: (1) check node specs one by one (GPU counts, link matrices, NIC
// references); (2) walk the switch tree, checking that every name is unique
// and every node sits in exactly one leaf; (3) number nodes and GPUs in
// depth-first order, so each domain covers a contiguous range; (4) derive
// NVLink islands as connected components of each node's link graph.
// All errors found in phase 1 and 2 are reported together, each prefixed
// with where it came from, so a file with several mistakes is fixed in one
// pass.
func Build(spec Spec) (*Cluster, error) {
	b := &builder{
		spec:         &spec,
		c:            &Cluster{Name: spec.Name},
		nodeSpec:     map[string]int{},
		placed:       map[string]string{},
		domainByName: map[string]string{},
	}
	b.checkNodes()
	b.checkTree()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.number()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.c.Hash = specHash(&spec)
	return b.c, nil
}

type builder struct {
	spec         *Spec
	c            *Cluster
	errs         []error
	nodeSpec     map[string]int    // node name -> index in spec.Nodes
	placed       map[string]string // node name -> the leaf or block holding it
	domainByName map[string]string // switch/block name -> where declared
}

func (b *builder) errorf(at, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if at == "" {
		at = b.spec.At
	}
	if at != "" {
		msg = at + ": " + msg
	}
	b.errs = append(b.errs, errors.New(msg))
}

// checkNodes is phase 1.
func (b *builder) checkNodes() {
	if len(b.spec.Nodes) == 0 {
		b.errorf("", "cluster %q has no nodes", b.spec.Name)
	}
	if len(b.spec.Nodes) > MaxNodes {
		b.errorf("", "cluster %q has %d nodes; gangtopo supports at most %d", b.spec.Name, len(b.spec.Nodes), MaxNodes)
		return
	}
	for i := range b.spec.Nodes {
		n := &b.spec.Nodes[i]
		if n.Name == "" {
			b.errorf(n.At, "node without a name")
			continue
		}
		if prev, dup := b.nodeSpec[n.Name]; dup {
			b.errorf(n.At, "duplicate node name %q (first declared at %s)", n.Name, b.spec.Nodes[prev].At)
			continue
		}
		b.nodeSpec[n.Name] = i
		if n.CPUs < 0 || n.MemoryMiB < 0 {
			b.errorf(n.At, "node %s: cpus and memory must not be negative", n.Name)
		}
		for gi, g := range n.GPUs {
			if CanonicalModel(g.Model) == "" {
				b.errorf(n.At, "node %s: gpu %d has no model", n.Name, gi)
			}
		}
		b.checkLinks(n)
		b.checkSpeeds(n)
		for ni, nic := range n.NICs {
			for _, g := range nic.GPUs {
				if g < 0 || g >= len(n.GPUs) {
					b.errorf(n.At, "node %s: nic %d (%s) names gpu %d, but the node has GPUs 0..%d", n.Name, ni, nic.Name, g, len(n.GPUs)-1)
				}
			}
		}
	}
}

func (b *builder) checkLinks(n *NodeSpec) {
	if n.Links == nil {
		return
	}
	k := len(n.GPUs)
	if len(n.Links) != k {
		b.errorf(n.At, "node %s: links has %d rows, want one per GPU (%d)", n.Name, len(n.Links), k)
		return
	}
	for i, row := range n.Links {
		if len(row) != k {
			b.errorf(n.At, "node %s: links row %d has %d entries, want %d (one per GPU; a link to a GPU index >= %d names a missing peer)", n.Name, i, len(row), k, k)
			return
		}
	}
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			if i == j {
				continue
			}
			if n.Links[i][j] < 0 || n.Links[i][j] > 255 {
				b.errorf(n.At, "node %s: links[%d][%d] = %d, want 0..255", n.Name, i, j, n.Links[i][j])
			} else if n.Links[i][j] != n.Links[j][i] {
				b.errorf(n.At, "node %s: links are not symmetric: links[%d][%d] = %d but links[%d][%d] = %d", n.Name, i, j, n.Links[i][j], j, i, n.Links[j][i])
			}
		}
	}
}

// checkSpeeds checks the link speeds a spec gives (0: the model's default).
func (b *builder) checkSpeeds(n *NodeSpec) {
	for _, c := range []struct {
		key string
		v   float64
	}{{"nvlink_gbytes", n.NVLinkGBs}, {"pcie_gbytes", n.PCIeGBs}} {
		if msg := checkSpeed(c.v); c.v != 0 && msg != "" {
			b.errorf(n.At, "node %s: %s %s", n.Name, c.key, msg)
		}
	}
	if msg := checkTFLOPS(n.DenseTFLOPS); n.DenseTFLOPS != 0 && msg != "" {
		b.errorf(n.At, "node %s: dense_tflops %s", n.Name, msg)
	}
	if n.NVLinkGBs != 0 && n.Links == nil {
		b.errorf(n.At, "node %s: nvlink_gbytes %g given, but its GPUs have no NVLink (nvlink: none)", n.Name, n.NVLinkGBs)
	}
}

// checkOversubscription checks a leaf's or spine's ratio (0: 1).
func (b *builder) checkOversubscription(what, name, at string, v float64) {
	if msg := checkOversubscription(v); v != 0 && msg != "" {
		b.errorf(at, "%s %s: oversubscription %s", what, name, msg)
	}
}

// checkTree is phase 2.
func (b *builder) checkTree() {
	if len(b.spec.Spines) > 0 && len(b.spec.Leaves) > 0 {
		b.errorf("", "cluster %q lists both spines and top-level leaves; put every leaf under a spine, or use no spines", b.spec.Name)
	}
	b.claimDomain(b.spec.Name, b.spec.At)
	for _, s := range b.spec.Spines {
		b.claimDomain(s.Name, s.At)
		b.checkOversubscription("spine", s.Name, s.At, s.Oversubscription)
		if len(s.Leaves) == 0 {
			b.errorf(s.At, "spine %s has no leaves", s.Name)
		}
		for _, l := range s.Leaves {
			b.checkLeaf(l)
		}
	}
	for _, l := range b.spec.Leaves {
		b.checkLeaf(l)
	}
	for _, n := range b.spec.Nodes {
		if _, ok := b.placed[n.Name]; !ok && n.Name != "" {
			b.errorf(n.At, "node %s is in no leaf (every node must be listed under exactly one leaf)", n.Name)
		}
	}
}

func (b *builder) checkLeaf(l LeafSpec) {
	b.claimDomain(l.Name, l.At)
	b.checkOversubscription("leaf", l.Name, l.At, l.Oversubscription)
	if len(l.Nodes) == 0 && len(l.Blocks) == 0 {
		b.errorf(l.At, "leaf %s has no nodes", l.Name)
	}
	b.placeNodes(l.Nodes, "leaf "+l.Name, l.At)
	for _, bl := range l.Blocks {
		b.claimDomain(bl.Name, bl.At)
		if len(bl.Nodes) == 0 {
			b.errorf(bl.At, "block %s has no nodes", bl.Name)
		}
		b.placeNodes(bl.Nodes, "block "+bl.Name+" of leaf "+l.Name, bl.At)
	}
}

func (b *builder) claimDomain(name, at string) {
	if name == "" {
		b.errorf(at, "switch or block without a name")
		return
	}
	if prev, dup := b.domainByName[name]; dup {
		b.errorf(at, "duplicate name %q (already used at %s)", name, prev)
		return
	}
	if _, isNode := b.nodeSpec[name]; isNode {
		b.errorf(at, "name %q is used by a node and by a switch or block", name)
	}
	b.domainByName[name] = at
}

func (b *builder) placeNodes(names []string, where, at string) {
	for _, name := range names {
		if _, ok := b.nodeSpec[name]; !ok {
			b.errorf(at, "%s lists node %s, which is not declared in nodes", where, name)
			continue
		}
		if prev, dup := b.placed[name]; dup {
			b.errorf(at, "node %s is in two places: %s and %s", name, prev, where)
			continue
		}
		b.placed[name] = where
	}
}

func specHash(s *Spec) string {
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("topology: spec does not marshal: %v", err)) // plain data always marshals
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:16])
}
