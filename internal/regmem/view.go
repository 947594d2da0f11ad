package regmem

import (
	"fmt"
	"sync"

	"github.com/gocoll/gocoll/internal/shmem"
)

// maxViews is how many mappings of other processes' allocations this
// process keeps while no call uses them. An owner does not tell when it
// frees an allocation, and a kept mapping keeps its memory: the bound
// caps what stale mappings hold, and it is larger than the buffers a
// training loop or a benchmark cycles through.
const maxViews = 32

// A View is this process's mapping of an allocation of another process.
type View struct {
	region *shmem.Region
	pid    int
	serial uint64
	id     shmem.Identity
	pins   int    // guarded by views.mu
	used   uint64 // views.clock at the last Map
}

var views struct {
	mu    sync.Mutex
	list  []*View
	clock uint64
}

// Map returns the bytes that extent e of process pid's registered memory
// names, mapping its allocation on first use, and pins the mapping until
// Release. An e that does not describe a range inside its file, or a
// file that is not the one e names, is an error.
func Map(pid int, e Extent) ([]byte, *View, error) {
	if !e.valid() {
		return nil, nil, fmt.Errorf("process %d's registered memory: bytes %d to %d of an allocation of %d (number %d)",
			pid, e.Off, e.Off+e.Len, e.Size, e.Serial)
	}
	views.mu.Lock()
	defer views.mu.Unlock()
	views.clock++
	var v *View
	for _, w := range views.list {
		if w.pid == pid && w.serial == e.Serial && w.id == e.ID && len(w.region.Bytes()) == e.Size {
			v = w
			break
		}
	}
	if v == nil {
		region, err := shmem.Open(pid, e.FD, e.ID, e.Size)
		if err != nil {
			return nil, nil, fmt.Errorf("mapping registered memory: %w", err)
		}
		// The mapping keeps the memory; the descriptor is not needed.
		region.CloseFD()
		v = &View{region: region, pid: pid, serial: e.Serial, id: e.ID}
		views.list = append(views.list, v)
	}
	v.pins++
	v.used = views.clock
	evict()
	return v.region.Bytes()[e.Off : e.Off+e.Len : e.Off+e.Len], v, nil
}

// Release ends a pin of Map.
func (v *View) Release() {
	views.mu.Lock()
	v.pins--
	views.mu.Unlock()
}

// evict unmaps the least recently used mappings that no call pins, while
// there are more than maxViews.
func evict() {
	for len(views.list) > maxViews {
		oldest := -1
		for i, v := range views.list {
			if v.pins == 0 && (oldest < 0 || v.used < views.list[oldest].used) {
				oldest = i
			}
		}
		if oldest < 0 {
			return // every one is in use
		}
		views.list[oldest].region.Close()
		views.list[oldest] = views.list[len(views.list)-1]
		views.list = views.list[:len(views.list)-1]
	}
}
