package nodefit

// Tally is an estimate kept up to date node by node: when one node's pods
// change, Update recounts that node alone instead of every node. It is not
// safe for concurrent use; the Result it hands out is never modified
// afterwards (Largest is replaced, not written in place).
type Tally struct {
	// Result is the estimate now.
	Result
	counts []int32 // per node: replicas it holds (0 if not eligible)
	slots  []int32 // per node: free pod slots (0 if not eligible)
	argmax []int   // per request: the node with Largest (-1: none)
}

func freeSlots(n *Node) int32 { return int32(min(max(n.Alloc.Pods-n.Used.Pods, 0)/PodAmount, 1<<30)) }

// NewTally counts every node (as Estimate does).
func NewTally(s *Shape, nodes []*Node, eligible []bool) *Tally {
	if len(s.slots) != len(s.Requests) {
		s.index()
	}
	t := &Tally{counts: make([]int32, len(nodes)), slots: make([]int32, len(nodes)), argmax: make([]int, len(s.Requests))}
	t.Largest = make([]Request, len(s.Requests))
	for j, r := range s.Requests {
		t.Largest[j].Name = r.Name
		t.argmax[j] = -1
	}
	for i, n := range nodes {
		if n.Object != nil {
			t.Total++ // a node known only from pods bound to it is not counted
		}
		if !eligible[i] {
			continue
		}
		t.Nodes++
		t.counts[i] = int32(min(s.Count(n), 1<<30))
		t.Replicas += int64(t.counts[i])
		t.slots[i] = freeSlots(n)
		t.FreePods += int64(t.slots[i])
		for j, r := range s.Requests {
			sl := s.slots[j]
			if free := n.Alloc.at(sl, r.Name) - n.Used.at(sl, r.Name); t.argmax[j] < 0 || free > t.Largest[j].Amount {
				t.Largest[j].Amount, t.argmax[j] = free, i
			}
		}
	}
	for j := range t.Largest {
		t.Largest[j].Amount = max(t.Largest[j].Amount, 0)
	}
	return t
}

// Update recounts node i after its pods changed (the set of nodes and
// their eligibility are unchanged). It returns false when the tally cannot
// be kept by itself (the node that had the most free of a resource now
// has less): count afresh with NewTally.
func (t *Tally) Update(s *Shape, nodes []*Node, eligible []bool, i int) bool {
	if i < 0 || i >= len(t.counts) || !eligible[i] {
		return i >= 0 && i < len(t.counts)
	}
	n := nodes[i]
	count := int32(min(s.Count(n), 1<<30))
	t.Replicas += int64(count - t.counts[i])
	t.counts[i] = count
	slots := freeSlots(n)
	t.FreePods += int64(slots - t.slots[i])
	t.slots[i] = slots
	var largest []Request
	for j, r := range s.Requests {
		sl := s.slots[j]
		free := max(n.Alloc.at(sl, r.Name)-n.Used.at(sl, r.Name), 0)
		switch {
		case t.argmax[j] == i && free < t.Largest[j].Amount:
			return false
		case free > t.Largest[j].Amount || t.argmax[j] == i && free != t.Largest[j].Amount:
			if largest == nil {
				largest = append([]Request(nil), t.Largest...)
			}
			largest[j].Amount, t.argmax[j] = free, i
		}
	}
	if largest != nil {
		t.Largest = largest
	}
	return true
}
