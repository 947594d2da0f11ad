// Package bench measures collectives the way the OSU micro-benchmarks and
// nccl-tests do, and reads and writes the results in the format that the
// reference scripts in bench/reference use, so that a sweep of gocoll
// and one of Open MPI or mpi4py on the same machine sit side by side.
//
// A Result is one (collective, size) point: the average time of a call,
// the largest over the ranks of each rank's average, and the algorithm
// and bus bandwidths derived from it. WriteCSV writes results with the
// anchors' columns
//
//	impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps
//
// followed by gocoll's own (algo, codec, chunk, min_us, max_us, cpu_us:
// the CPU time a rank's process spends per call, all its threads, which
// shows what a rank that spins while it waits pays, measured on a quarter
// as many calls again after the timed ones, since reading it delays a
// call; p50_us, p99_us: the median and 99th percentile of a rank's
// calls; link, auto: see below); ReadCSV reads files of either kind.
//
// The transport column says what the sweep asked for, auto included; algo
// and link say what the calls ran and over what, as the communicator
// counted them (comm.Comm.Stats): the algorithm forced or, where auto is
// true, the selector's choice, and "tcp", "shm" or "mem" links or the
// host's shared "segment". Key compares a point of an auto sweep by its
// link, so that it meets the reference files' shm and tcp points. BusFactor gives nccl-tests' bus bandwidth
// factors, which make the figures of different rank counts comparable.
//
// Run measures a sweep on every rank of a job, as gocoll bench does: a
// Config names the collectives, sizes (ParseSizes reads specs such as
// "8:64M"), algorithms, chunk sizes and wire codecs; with a codec, the
// bandwidths count the data's float32 bytes, not the fewer on the wire.
// Each point is warmed up and timed call by call between barriers, like
// mpi_coll_bench.c, with as many calls as Iterations says, and every
// call's result is checked against the data the ranks sent; a wrong
// element fails the sweep with a *VerifyError. WriteTable prints results
// for people, and Tune picks from them what a tuning table should say.
package bench
