// Package regmem keeps the registered memory of a process: allocations
// in shared memory that the other processes of its host can map (Alloc,
// Free), and this process's mappings of theirs (Map).
//
// Each allocation is a shmem.Region of its own, unnamed, which its owner
// keeps open until Free. An Extent tells another process where bytes of
// an allocation are: the owner's descriptor, the file's identity and the
// range. That process maps the whole allocation through
// /proc/<pid>/fd/<fd>, once, and keeps the mapping in a small cache, so
// that a loop of calls on the same buffers maps nothing after its first
// call.
//
// A call pins what it uses, its own allocations (Pin) and its mappings of
// others' (Map), until it ends. Free refuses a pinned allocation. Freed
// memory keeps its addresses but not its contents: the owner's mapping is
// replaced by private zero pages (shmem.Region.Retire), so a slice kept
// past Free can never reach another process's memory, and the shared
// pages go once the other processes' caches let go of their mappings.
package regmem
