package topobuild

import (
	"github.com/gangtopo/gangtopo/selector/hostlist"

	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// ibnetdiscover lines: block headers and the port lines under them.
var (
	ibHeader = regexp.MustCompile(`^(Switch|Ca|Rt)\s+\d+\s+"([SHR])-([0-9a-fA-F]+)"\s*(?:#\s*"([^"]*)")?`)
	ibPort   = regexp.MustCompile(`^\[\d+\][^"]*"([SHR])-([0-9a-fA-F]+)"\[\d+\][^#]*(?:#\s*"([^"]*)")?`)
)

// ibFabric is what the dump says: switch adjacency and CA names.
type ibFabric struct {
	switchDesc map[string]string            // switch GUID -> description
	switchAt   map[string]int               // switch GUID -> line of its header
	order      []string                     // switch GUIDs in file order
	hosts      map[string]map[string]bool   // switch GUID -> hosts on its ports
	peers      map[string]map[string]bool   // switch GUID -> neighbour switch GUIDs
	caDesc     map[string]string            // CA GUID -> node description
	caOnSwitch map[string]map[string]string // switch GUID -> CA GUID -> description from the port line
}

// ParseIBNetDiscover reads the default output of `ibnetdiscover` and
// derives the leaf and spine domains.
//
// Overview. Hosts are named by the first word of their HCAs' node
// description ("node018 HCA-1" -> node018), which rdma-ndd sets to the
// host name. A switch with hosts on its ports is a leaf switch. Hosts are
// grouped by the set of leaf switches they reach: with one HCA per host
// that is one switch; with rail-optimised cabling (eight HCAs to eight
// rail switches) it is the rail group, the unit inside which all rails
// are one hop apart. Each group is a leaf domain. Leaf domains are then
// grouped by the set of switches above their leaf switches; when every
// domain reaches the same upper switches (a two-level fat tree) there is
// no spine tier, else each group is a spine domain (the pods of a
// three-level tree). Domains are named leaf01.., spine01.. in order of
// their first host, with the switches' GUIDs and descriptions kept as
// comments.
func ParseIBNetDiscover(r io.Reader, name string) (*SwitchTree, error) {
	f, err := readIBFabric(r, name)
	if err != nil {
		return nil, err
	}
	t := &SwitchTree{Source: name}
	leafGroups, leafKeys := f.groupHosts()
	if len(leafGroups) == 0 {
		return nil, fmt.Errorf("%s: no switch has a host (HCA) on its ports; is this ibnetdiscover output?", name)
	}
	upper := map[string][]int{} // upstream key -> leaf group indices
	var upperOrder []string
	for i, key := range leafKeys {
		up := f.upstream(strings.Split(key, ","))
		if _, ok := upper[up]; !ok {
			upperOrder = append(upperOrder, up)
		}
		upper[up] = append(upper[up], i)
	}
	for i, hosts := range leafGroups {
		t.Switches = append(t.Switches, Switch{
			Name: fmt.Sprintf("leaf%02d", i+1), Nodes: hosts, Comment: f.describe(strings.Split(leafKeys[i], ",")),
			At: fmt.Sprintf("%s:%d", name, f.switchAt[strings.Split(leafKeys[i], ",")[0]]),
		})
	}
	if len(upper) > 1 {
		for s, up := range upperOrder {
			sw := Switch{Name: fmt.Sprintf("spine%02d", s+1), At: name, Comment: f.describe(strings.Split(up, ","))}
			for _, li := range upper[up] {
				sw.Children = append(sw.Children, t.Switches[li].Name)
			}
			t.Switches = append(t.Switches, sw)
		}
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

func readIBFabric(r io.Reader, name string) (*ibFabric, error) {
	f := &ibFabric{
		switchDesc: map[string]string{}, switchAt: map[string]int{}, hosts: map[string]map[string]bool{},
		peers: map[string]map[string]bool{}, caDesc: map[string]string{}, caOnSwitch: map[string]map[string]string{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	cur, curKind := "", ""
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(text, "Switch") || strings.HasPrefix(text, "Ca") || strings.HasPrefix(text, "Rt"):
			m := ibHeader.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: cannot read node header %q", name, line, text)
			}
			cur, curKind = strings.ToLower(m[3]), m[1]
			if curKind == "Switch" {
				f.switchDesc[cur], f.switchAt[cur] = m[4], line
				f.order = append(f.order, cur)
			} else if curKind == "Ca" {
				f.caDesc[cur] = m[4]
			}
		case strings.HasPrefix(text, "["):
			if curKind != "Switch" {
				continue // the same links are listed from the switch side
			}
			m := ibPort.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: cannot read port line %q", name, line, text)
			}
			f.addLink(cur, m[1], strings.ToLower(m[2]), m[3])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(f.order) == 0 {
		return nil, fmt.Errorf("%s: no Switch entries; is this ibnetdiscover output?", name)
	}
	return f, nil
}

func (f *ibFabric) addLink(sw, kind, guid, desc string) {
	switch kind {
	case "S":
		addTo(f.peers, sw, guid)
	case "H":
		if f.caOnSwitch[sw] == nil {
			f.caOnSwitch[sw] = map[string]string{}
		}
		f.caOnSwitch[sw][guid] = desc
	}
}

func addTo(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// hostName is the host of a CA: the first word of its node description.
func (f *ibFabric) hostName(ca, portDesc string) string {
	d := f.caDesc[ca]
	if d == "" {
		d = portDesc
	}
	if fs := strings.Fields(d); len(fs) > 0 {
		return fs[0]
	}
	return ""
}

// groupHosts groups hosts by the set of leaf switches they reach; it
// returns the groups (hosts in natural order) ordered by their first host,
// and each group's key (its sorted switch GUIDs, comma-joined).
func (f *ibFabric) groupHosts() ([][]string, []string) {
	reach := map[string]map[string]bool{} // host -> switches
	for _, sw := range f.order {
		for ca, desc := range f.caOnSwitch[sw] {
			if h := f.hostName(ca, desc); h != "" {
				addTo(reach, h, sw)
			}
		}
	}
	byKey := map[string][]string{}
	for h, sws := range reach {
		key := strings.Join(sortedKeys(sws), ",")
		byKey[key] = append(byKey[key], h)
	}
	var keys []string
	for k, hs := range byKey {
		sort.Slice(hs, func(a, b int) bool { return hostlist.Less(hs[a], hs[b]) })
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return hostlist.Less(byKey[keys[a]][0], byKey[keys[b]][0]) })
	groups := make([][]string, len(keys))
	for i, k := range keys {
		groups[i] = byKey[k]
	}
	return groups, keys
}

// upstream is the set of switches next to the given leaf switches that have
// no hosts themselves, as a sorted comma-joined key.
func (f *ibFabric) upstream(leafSwitches []string) string {
	up := map[string]bool{}
	for _, sw := range leafSwitches {
		for p := range f.peers[sw] {
			if len(f.caOnSwitch[p]) == 0 {
				up[p] = true
			}
		}
	}
	return strings.Join(sortedKeys(up), ",")
}

func (f *ibFabric) describe(guids []string) string {
	var parts []string
	for _, g := range guids {
		if g == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("S-%s %q", g, f.switchDesc[g]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
