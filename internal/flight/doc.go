// Package flight is gocoll's flight recorder: what each rank writes down
// about its last collective operations when its job fails or hangs, and
// the diagnosis that gocoll run draws from the dumps of all ranks.
//
// A rank that waits forever cannot say why: it knows only that a peer did
// not send. The reason is in the peer's state (it called another
// collective, has not called this one, or died), so the launcher, which
// can read every rank's dump, is the one place a hang can be explained.
//
// # Dumps
//
// Each rank keeps, per communicator, the sequence number of the last
// operation it started and its last few dozen operations, each marked
// running or done: a communicator runs at most one blocking collective at
// a time, and any number of async ones (AllreduceAsync) beside it, which
// end in any order. An operation found slow records whom it waited for,
// in which step of its algorithm, and since when. When the job fails
// (timeout, abort, lost peer), or on SIGUSR1, the rank writes a Dump:
// WriteJSON for the launcher, Format for a person reading its log. With
// GOCOLL_DUMP=path, rank N writes to RankPath(path, N). ReadDump rejects
// input that is not a dump, or whose parts contradict each other, so that
// Diagnose and Format can trust the indices in it.
//
// The sequence numbers of a communicator are the same on all its ranks:
// operation #812 on one rank is supposed to be #812 on every other. That
// is what lets dumps taken apart be matched.
//
// An operation waits if it runs and recorded a wait. One that does not
// run is done, whatever it recorded: its wait is history, which Format
// shows ("done (was slow ...)") and Diagnose ignores. The last operation
// a rank started may be missing from its dump, which caught it as it
// started; it is taken to run, with no wait recorded.
//
// Each algorithm numbers its steps from 0. One made of phases (a reduce,
// then a bcast) numbers the steps of phase P from P<<20, and a final
// hand-back step may be 1<<20 - 1: they print as "phase 1 step 3" and
// "its last step".
//
// # Diagnosis
//
// Diagnose follows each waiting rank to the rank it waits for and reads
// that rank's own dump for the same operation (same communicator, same
// sequence number):
//
//   - it waits in the same operation too: the chain goes on to the rank it
//     waits for, until it ends or comes back on itself ("ranks 0 and 1 wait
//     for each other");
//   - it called another collective at that number, or the same one with
//     other arguments: the ranks disagree, which is a bug in the program;
//   - it has not called the operation, or has finished it: the diagnosis
//     says what it does instead, waiting elsewhere (the chain goes on,
//     also across communicators, where a cycle means two communicators
//     used in different orders) or running its own code;
//   - it wrote no dump: it died, or hangs where it cannot answer.
//
// Lines start from the ranks that wait in the same operation for the same
// rank, so a thousand ranks stuck behind one make one line, and long
// chains are shortened in the middle. Lines go by their cause, those that
// explain a hang by themselves first: a mismatch, a cycle, a dead rank,
// then a rank elsewhere; within a cause, those that hold up the most ranks
// first. Then one line each for ranks without a dump, ranks whose
// operations run with no recorded wait, and ranks idle in their own code,
// which run no operation. An operation issued by AllreduceAsync is named
// so ("AllreduceAsync #9"); its Kind is "Allreduce".
//
// The waits' durations come from each waiting rank's clock, and the
// moment a rank dumped from its own: across hosts they are as good as the
// hosts' clocks agree. A rank that dumped before another began to wait for
// it may have moved on since, and the diagnosis says so.
//
// Ranks are world ranks, which is what the user sees in errors and the
// launcher's output; a communicator other than the world is named by its
// id.
package flight
