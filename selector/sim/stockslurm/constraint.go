package stockslurm

import (
	"fmt"
	"strings"
)

// A constraint is a job's --constraint (job_desc_msg_t features) as
// slurmctld evaluates it (node_scheduler.c, 22.05):
//
//   - names joined by & (AND) and | (OR), evaluated left to right with no
//     precedence (valid_feature_counts walks the list applying each
//     operator to the running result), parentheses grouping;
//   - one matching-OR group [a|b|c]: all of the job's nodes must have the
//     same one of its names. _pick_best_nodes tries the alternatives in
//     the order written and the job starts with the first that can start
//     it now (backfill: the earliest start, the first on a tie), so the
//     order is a ranking Slurm honours at schedule time. Slurm keeps the
//     alternatives in a bitmap of MAX_FEATURES = 64 bits (22.05 to
//     26.05): a list longer than that is refused here.
//
// Node counts (name*2) and the XAND form are not modelled.
type constraint struct {
	root *cnode
	alts []string // the matching-OR group's names, in order; nil if none
}

// maxAlternatives is Slurm's MAX_FEATURES.
const maxAlternatives = 64

// cnode is one node of a parsed constraint: a feature name, the
// matching-OR group (xor), or op applied to l and r.
type cnode struct {
	name string
	xor  bool
	op   byte // '&' or '|' for an operator node
	l, r *cnode
}

// parseConstraint reads a feature expression; "" is no constraint.
func parseConstraint(s string) (constraint, error) {
	p := cparser{s: s}
	var c constraint
	if strings.TrimSpace(s) == "" {
		return c, nil
	}
	root, err := p.expr(&c)
	switch {
	case err == nil && p.peek() == '*':
		err = fmt.Errorf("node counts (name*N) are not modelled")
	case err == nil && p.i < len(p.s):
		err = fmt.Errorf("unexpected %q at %d", p.s[p.i], p.i)
	}
	if err != nil {
		return constraint{}, fmt.Errorf("constraint %q: %w", s, err)
	}
	c.root = root
	return c, nil
}

type cparser struct {
	s string
	i int
}

func (p *cparser) peek() byte {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// expr := item (('&'|'|') item)*, folded to the left.
func (p *cparser) expr(c *constraint) (*cnode, error) {
	left, err := p.item(c)
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		if op != '&' && op != '|' {
			return left, nil
		}
		p.i++
		right, err := p.item(c)
		if err != nil {
			return nil, err
		}
		left = &cnode{op: op, l: left, r: right}
	}
}

// item := name | '(' expr ')' | '[' name ('|' name)* ']'.
func (p *cparser) item(c *constraint) (*cnode, error) {
	switch p.peek() {
	case '(':
		p.i++
		n, err := p.expr(c)
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, fmt.Errorf("missing ) at %d", p.i)
		}
		p.i++
		return n, nil
	case '[':
		if c.alts != nil {
			return nil, fmt.Errorf("a second matching-OR group at %d", p.i)
		}
		p.i++
		for {
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			c.alts = append(c.alts, name)
			switch p.peek() {
			case '|':
				p.i++
				continue
			case ']':
				p.i++
			default:
				return nil, fmt.Errorf("want | or ] at %d", p.i)
			}
			break
		}
		if len(c.alts) > maxAlternatives {
			return nil, fmt.Errorf("%d alternatives in the matching-OR group (Slurm holds at most %d)", len(c.alts), maxAlternatives)
		}
		return &cnode{xor: true}, nil
	}
	return p.leaf()
}

func (p *cparser) leaf() (*cnode, error) {
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	return &cnode{name: name}, nil
}

func (p *cparser) name() (string, error) {
	p.peek()
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune("&|()[] *", rune(p.s[p.i])) {
		p.i++
	}
	if p.i == start {
		return "", fmt.Errorf("want a feature name at %d", p.i)
	}
	return p.s[start:p.i], nil
}

// passes is how many node sets the constraint defines: one per
// alternative of its matching-OR group, else one.
func (c *constraint) passes() int { return max(len(c.alts), 1) }

// match says whether a node with the features has passes with
// matching-OR alternative alt (an index into alts; ignored without a
// group).
func (c *constraint) match(has map[string]bool, alt int) bool {
	if c.root == nil {
		return true
	}
	return c.root.eval(has, c, alt)
}

func (n *cnode) eval(has map[string]bool, c *constraint, alt int) bool {
	switch {
	case n.xor:
		return has[c.alts[alt]]
	case n.op == '&':
		return n.l.eval(has, c, alt) && n.r.eval(has, c, alt)
	case n.op == '|':
		return n.l.eval(has, c, alt) || n.r.eval(has, c, alt)
	}
	return has[n.name]
}
