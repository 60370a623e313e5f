package slurmstate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// ParseSqueueJSON reads `squeue --json` output and returns the jobs that hold
// resources (see jobHolds); pending and finished jobs are read, checked and
// dropped. label names the source in errors.
//
// Per node, a job's GPUs come from gres_detail, whose i-th entry belongs to
// the i-th node of job_resources (the pairing scontrol uses), its cores from
// job_resources.allocated_nodes[].sockets and its memory from
// memory_allocated. (cpus_used there is always 0 in 22.05.)
func ParseSqueueJSON(data []byte, label string) (jobs []Job, version string, err error) {
	return parseSqueueJSON(data, label, nil, pendingLists{})
}

// parseSqueueJSON is ParseSqueueJSON that also counts every job's decision
// into dec and collects the pending jobs (those with a decision into
// q.decided, all into q.all; each when not nil).
func parseSqueueJSON(data []byte, label string, dec Decisions, q pendingLists) (jobs []Job, version string, err error) {
	s := &jsonScanner{data: data, memo: gresMemo{}}
	m, saw, err := s.openAPIDoc("jobs", func(i int) error {
		j, holds, err := s.squeueJob(dec, q)
		if err != nil {
			return fmt.Errorf("jobs[%d]%s: %w", i, idSuffix(j.ID), err)
		}
		if holds {
			jobs = append(jobs, j)
		}
		return nil
	})
	if err == nil && !saw {
		err = fmt.Errorf("no %q list", "jobs")
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", label, err)
	}
	return jobs, m.release, nil
}

func idSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (job " + id + ")"
}

// squeueRaw holds a job's fields as read.
type squeueRaw struct {
	adminComment string
	stateFlags   []string // 23.02+: job_state's flags (["COMPLETED", "COMPLETING"])
	gresDetail   []string
	resources    *jobResources
	pending      pendingRaw // pending.go
	seen         int
}

type jobResources struct {
	nodes string
	alloc []JobNode
}

const (
	jID = 1 << iota
	jState
	jGres
	squeueRequired = jID | jState | jGres
)

var squeueFieldNames = []string{"job_id", "job_state", "gres_detail"}

// pendingLists are where a poll collects pending jobs.
// requeuing: the decided jobs being requeued (State.Requeuing).
type pendingLists struct{ decided, all, requeuing *[]PendingJob }

func (s *jsonScanner) squeueJob(dec Decisions, q pendingLists) (Job, bool, error) {
	var j Job
	var raw squeueRaw
	var field []byte // the key being read, for errors (aliases the input)
	err := s.object(func(key []byte) error {
		field = key
		return s.squeueField(field, &j, &raw)
	})
	if err != nil {
		return j, false, fmt.Errorf("field %s: %w", field, err)
	}
	if raw.seen&squeueRequired != squeueRequired {
		return j, false, fmt.Errorf("field %s: missing", firstMissing(raw.seen, squeueRequired, squeueFieldNames))
	}
	j.Facts.Known = true
	j.Facts.Priority = uint32(min(max(raw.pending.priority, 0), 1<<32-1))
	j.Facts.UserID = u32(raw.pending.userID)
	j.Facts.AdminComment = raw.adminComment
	holds, ok := jobHolds(j.State)
	if !ok {
		return j, false, fmt.Errorf("field job_state: unknown job state %q", j.State)
	}
	for _, f := range raw.stateFlags {
		// a flag such as COMPLETING holds the allocation whatever the base
		// state; other flags (REQUEUED, ...) change nothing here
		if h, _ := jobHolds(f); h {
			holds = true
		}
	}
	dec.add(raw.adminComment)
	if !holds {
		if strings.EqualFold(j.State, "PENDING") {
			pj, decided := raw.pending.pendingJob(&j, raw.adminComment)
			if decided && q.decided != nil {
				*q.decided = append(*q.decided, pj)
			}
			if q.all != nil {
				*q.all = append(*q.all, pj)
			}
		}
		return j, false, nil
	}
	if q.requeuing != nil && strings.EqualFold(j.State, "PENDING") && slices.Contains(raw.stateFlags, "COMPLETING") {
		if pj, decided := raw.pending.pendingJob(&j, raw.adminComment); decided {
			*q.requeuing = append(*q.requeuing, pj)
		}
	}
	j.GangTopology, j.Models = requestFrom(raw.adminComment)
	return j, true, j.attachResources(raw, s.memo)
}

func (s *jsonScanner) squeueField(key []byte, j *Job, raw *squeueRaw) error {
	var err error
	switch string(key) {
	case "job_id":
		var id int64
		id, err = s.count64()
		if err == nil && id == 0 {
			err = fmt.Errorf("job ID 0")
		}
		j.ID = strconv.FormatInt(id, 10)
		raw.seen |= jID
	case "job_state":
		j.State, raw.stateFlags, err = s.stateList()
		raw.seen |= jState
	case "user_name":
		j.User, err = s.str()
	case "partition":
		j.Partition, err = s.str()
	case "cpus":
		j.CPUs, err = s.count()
	case "admin_comment":
		raw.adminComment, err = s.str()
	case "gres_detail":
		raw.gresDetail, err = s.strList()
		raw.seen |= jGres
	case "job_resources":
		raw.resources, err = s.jobResources()
	default:
		var handled bool
		if handled, err = s.factField(key, &j.Facts); handled {
			break
		}
		if handled, err = s.pendingField(key, &raw.pending); !handled {
			err = s.skip()
		}
	}
	return err
}

// jobResources reads job_resources: the node list and, per node, cores and
// memory.
func (s *jsonScanner) jobResources() (*jobResources, error) {
	if s.null() {
		return nil, nil
	}
	r := &jobResources{}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "nodes":
			if s.peek() == '{' { // 23.02+: {list, allocation[]}
				return s.jobResourcesNodes(r)
			}
			v, err := s.str()
			r.nodes = v
			return err
		case "allocated_nodes":
			return s.array(func(i int) error {
				jn, err := s.allocatedNode()
				if err != nil {
					return fmt.Errorf("allocated_nodes[%d]: %w", i, err)
				}
				r.alloc = append(r.alloc, jn)
				return nil
			})
		default:
			return s.skip()
		}
	})
	return r, err
}

func (s *jsonScanner) allocatedNode() (JobNode, error) {
	var jn JobNode
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "nodename":
			jn.Name, err = s.str()
		case "memory_allocated":
			jn.MemMiB, err = s.count64()
		case "sockets":
			jn.Cores, err = s.countCores()
		default:
			err = s.skip()
		}
		return err
	})
	if err == nil && jn.Name == "" {
		err = fmt.Errorf("field nodename: missing")
	}
	return jn, err
}

// jobResourcesNodes reads job_resources.nodes of 23.02 and later: the host
// list, and per node its cores and memory.
func (s *jsonScanner) jobResourcesNodes(r *jobResources) error {
	return s.object(func(key []byte) error {
		switch string(key) {
		case "list":
			v, err := s.str()
			r.nodes = v
			return err
		case "allocation":
			return s.array(func(i int) error {
				jn, err := s.allocation()
				if err != nil {
					return fmt.Errorf("nodes.allocation[%d]: %w", i, err)
				}
				r.alloc = append(r.alloc, jn)
				return nil
			})
		default:
			return s.skip()
		}
	})
}

// allocation reads one node of job_resources.nodes.allocation (23.02+).
func (s *jsonScanner) allocation() (JobNode, error) {
	var jn JobNode
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			jn.Name, err = s.str()
		case "memory":
			err = s.object(func(k []byte) error {
				if string(k) != "allocated" {
					return s.skip()
				}
				var e error
				jn.MemMiB, e = s.count64()
				return e
			})
		case "sockets":
			jn.Cores, err = s.countCoreList()
		default:
			err = s.skip()
		}
		return err
	})
	if err == nil && jn.Name == "" {
		err = fmt.Errorf("field name: missing")
	}
	return jn, err
}

// countCoreList counts the allocated cores of
// [{"index":0,"cores":[{"index":3,"status":["ALLOCATED"]}]}] (23.02+, which
// lists every core of the node, UNALLOCATED ones too).
func (s *jsonScanner) countCoreList() (int, error) {
	n := 0
	err := s.array(func(int) error {
		return s.object(func(key []byte) error {
			if string(key) != "cores" {
				return s.skip()
			}
			return s.array(func(int) error {
				return s.object(func(k []byte) error {
					if string(k) != "status" {
						return s.skip()
					}
					st, err := s.strOrList()
					for _, v := range st {
						if v == "ALLOCATED" {
							n++
							break
						}
					}
					return err
				})
			})
		})
	})
	return n, err
}

// countCores counts the cores marked allocated in {"0":{"cores":{"3":"allocated"}}}.
func (s *jsonScanner) countCores() (int, error) {
	n := 0
	err := s.object(func([]byte) error {
		return s.object(func(key []byte) error {
			if string(key) != "cores" {
				return s.skip()
			}
			return s.object(func([]byte) error {
				v, err := s.str()
				if err == nil && v != "allocated" && v != "allocated_and_in_use" {
					err = fmt.Errorf("core state %q (want allocated or allocated_and_in_use)", v)
				}
				n++
				return err
			})
		})
	})
	return n, err
}

// attachResources fills a holding job's nodes from job_resources and
// gres_detail.
func (j *Job) attachResources(raw squeueRaw, memo gresMemo) error {
	r := raw.resources
	if r == nil || r.nodes == "" {
		return fmt.Errorf("field job_resources: missing for a %s job", j.State)
	}
	j.NodeList = r.nodes
	nodes := r.alloc
	if len(nodes) == 0 { // 22.05 leaves allocated_nodes out when it lacks socket data
		names, err := hostlist.Expand(r.nodes)
		if err != nil {
			return fmt.Errorf("field job_resources.nodes: %w", err)
		}
		for _, n := range names {
			nodes = append(nodes, JobNode{Name: n})
		}
	}
	if len(raw.gresDetail) > len(nodes) {
		return fmt.Errorf("field gres_detail: %d entries for %d nodes", len(raw.gresDetail), len(nodes))
	}
	for i, d := range raw.gresDetail {
		if err := nodes[i].setGres(memo, d); err != nil {
			return fmt.Errorf("field gres_detail[%d] (%s): %w", i, nodes[i].Name, err)
		}
	}
	j.Nodes = nodes
	return nil
}

// setGres reads a job's per-node GRES detail ("gpu:4(IDX:0-3),shard:2(IDX:5)").
// memo may be nil.
func (jn *JobNode) setGres(memo gresMemo, detail string) error {
	p := memo.gpus(detail)
	if p.err != nil {
		return p.err
	}
	jn.GPUs, jn.GPUCount = p.use.Idx, p.use.Count
	if p.shards == 0 {
		return nil
	}
	gs, _ := ParseGres(detail) // parsed without error above
	for _, g := range gs {
		if g.Name != "shard" || g.Count == 0 {
			continue
		}
		if len(g.Idx) == 0 {
			return fmt.Errorf("shard entry without GPU indices")
		}
		// 22.05 does not say how a multi-GPU shard allocation splits: assume
		// evenly, rounding up (never shows a shard free that is not).
		per := int((g.Count + int64(len(g.Idx)) - 1) / int64(len(g.Idx)))
		if jn.Shards == nil {
			jn.Shards = map[int]int{}
		}
		for _, i := range g.Idx {
			jn.Shards[i] += per
		}
	}
	return nil
}
