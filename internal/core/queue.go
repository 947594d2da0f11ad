package core

// queue is the FIFO of one match key's posted receives or early messages:
// a ring buffer, so that taking the oldest costs O(1) however many wait.
type queue[T comparable] struct {
	buf  []T
	head int
	n    int
}

func (q *queue[T]) push(v T) {
	if q.n == len(q.buf) {
		grown := make([]T, max(4, 2*len(q.buf)))
		for i := range q.n {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

// pop removes and returns the oldest item; the queue is not empty.
func (q *queue[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// remove takes v out wherever it is, keeping the others in order, and
// reports whether it was there. It costs O(n): it serves withdrawn
// receives and failed reads, not the matching path.
func (q *queue[T]) remove(v T) bool {
	for i := range q.n {
		if q.buf[(q.head+i)%len(q.buf)] != v {
			continue
		}
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)%len(q.buf)] = q.buf[(q.head+j+1)%len(q.buf)]
		}
		var zero T
		q.buf[(q.head+q.n-1)%len(q.buf)] = zero
		q.n--
		return true
	}
	return false
}

// queues holds the items of each match key, oldest first. A key's first
// item is kept in the map itself, because almost every key of a
// collective carries one message; only a key with more takes a queue.
// Emptied queues are kept for the next key, buffer and all, so steady
// traffic allocates nothing once the map has grown to the most keys in
// use at once, even though every collective operation brings tags of its
// own.
//
// While one key alone has items, they are kept beside the map (lone),
// which then stays empty: most of the time a source has one receive
// posted, or one early message, and a map lookup, delete and clear cost
// about 30 ns of every message.
type queues[T comparable] struct {
	loneKey matchKey
	lone    slot[T]
	hasLone bool
	byKey   map[matchKey]slot[T]
	spare   []*queue[T]
}

// slot is one key's items: first, then more's.
type slot[T comparable] struct {
	first T
	more  *queue[T] // nil while first is the only item
}

// load returns key k's items, if it has any.
func (qs *queues[T]) load(k matchKey) (slot[T], bool) {
	if qs.hasLone && qs.loneKey == k {
		return qs.lone, true
	}
	s, ok := qs.byKey[k]
	return s, ok
}

// store sets the items of key k, which has some.
func (qs *queues[T]) store(k matchKey, s slot[T]) {
	switch {
	case qs.hasLone && qs.loneKey == k:
		qs.lone = s
	case !qs.hasLone && len(qs.byKey) == 0:
		qs.loneKey, qs.lone, qs.hasLone = k, s, true
	default:
		if qs.byKey == nil {
			qs.byKey = make(map[matchKey]slot[T])
		}
		qs.byKey[k] = s
	}
}

// forget removes key k, whose items are gone.
func (qs *queues[T]) forget(k matchKey) {
	if qs.hasLone && qs.loneKey == k {
		qs.lone, qs.hasLone = slot[T]{}, false
		return
	}
	delete(qs.byKey, k)
	if len(qs.byKey) == 0 {
		// Every operation brings keys of its own; deleting them leaves
		// tombstones that would make the map rehash, and allocate, every
		// so often. Clearing an empty map resets it for nothing.
		clear(qs.byKey)
	}
}

func (qs *queues[T]) push(k matchKey, v T) {
	s, ok := qs.load(k)
	switch {
	case !ok:
		qs.store(k, slot[T]{first: v})
		return
	case s.more == nil:
		if n := len(qs.spare); n > 0 {
			s.more, qs.spare = qs.spare[n-1], qs.spare[:n-1]
		} else {
			s.more = new(queue[T])
		}
		qs.store(k, s)
	}
	s.more.push(v)
}

// front returns the oldest item of key k, if there is one.
func (qs *queues[T]) front(k matchKey) (T, bool) {
	s, ok := qs.load(k)
	return s.first, ok
}

// pop removes and returns the oldest item of key k, which front returned.
func (qs *queues[T]) pop(k matchKey) T {
	v, _ := qs.take(k)
	return v
}

// take removes and returns the oldest item of key k, if there is one.
func (qs *queues[T]) take(k matchKey) (T, bool) {
	s, ok := qs.load(k)
	if !ok {
		return s.first, false
	}
	qs.advance(k, s)
	return s.first, true
}

// advance makes the item after s.first the first of key k, or removes k.
func (qs *queues[T]) advance(k matchKey, s slot[T]) {
	if s.more == nil {
		qs.forget(k)
		return
	}
	s.first = s.more.pop()
	if s.more.n == 0 {
		qs.retire(s.more)
		s.more = nil
	}
	qs.store(k, s)
}

// retire keeps an emptied queue for the next key that needs one.
func (qs *queues[T]) retire(q *queue[T]) {
	q.head = 0
	if len(q.buf) > 64 {
		q.buf = nil // a burst's buffer is not kept for ever
	}
	qs.spare = append(qs.spare, q)
}

// remove takes v out of key k's items and reports whether it was there.
func (qs *queues[T]) remove(k matchKey, v T) bool {
	s, ok := qs.load(k)
	switch {
	case !ok:
		return false
	case s.first == v:
		qs.advance(k, s)
		return true
	case s.more != nil && s.more.remove(v):
		if s.more.n == 0 {
			qs.retire(s.more)
			s.more = nil
			qs.store(k, s)
		}
		return true
	}
	return false
}

// drain removes every item, oldest first within each key, and passes it
// to f.
func (qs *queues[T]) drain(f func(T)) {
	if qs.hasLone {
		s := qs.lone
		qs.lone, qs.hasLone = slot[T]{}, false
		qs.drainSlot(s, f)
	}
	for k, s := range qs.byKey {
		qs.drainSlot(s, f)
		delete(qs.byKey, k)
	}
	clear(qs.byKey)
}

// drainSlot passes s's items to f, oldest first.
func (qs *queues[T]) drainSlot(s slot[T], f func(T)) {
	f(s.first)
	if s.more != nil {
		for s.more.n > 0 {
			f(s.more.pop())
		}
		qs.retire(s.more)
	}
}
