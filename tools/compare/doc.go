// Package compare sets gocoll's benchmark results beside those of other
// implementations (Open MPI, mpi4py, or another gocoll run) point by
// point, the way nccl-tests' results are read: the same collective, rank
// count, transport and message size, and the ratio of the times and of
// the bus bandwidths.
//
// Each file may hold several series: gocoll's algorithms and codecs, or
// variants spelled into the implementation's name (mpi4py-buffer,
// mpi4py-pickle). Series are never mixed: every series of ours is
// compared with every reference series at each point both have. Repeated
// measurements of one series at one point (several runs appended to one
// file) are reduced to their median, as the anchors' notes advise for
// noisy machines.
package compare
