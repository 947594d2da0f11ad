// Package bench measures collectives the way the OSU micro-benchmarks and
// nccl-tests do, and reads and writes the results in the format that the
// reference scripts in ../shared/anchors use, so that a sweep of gocoll
// and one of Open MPI or mpi4py on the same machine sit side by side.
//
// A Result is one (collective, size) point: the average time of a call,
// the largest over the ranks of each rank's average, and the algorithm
// and bus bandwidths derived from it. WriteCSV writes results with the
// anchors' columns
//
//	impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps
//
// followed by gocoll's own (algo, codec, chunk, min_us, max_us); ReadCSV
// reads files of either kind. BusFactor gives nccl-tests' bus bandwidth
// factors, which make the figures of different rank counts comparable.
package bench
