#!/usr/bin/env bash
# latency.sh TRANSPORT NP [ITERS] [BUILD...]
# Times small Allreduce and Bcast calls one by one, Open MPI (mpi_latency.c)
# and gocoll bench alternately, 3 rounds (ROUNDS=n for more), in the project
# checkout (cwd): the issue's 8-byte goal (mean, and p99 within 2x of Open
# MPI's). Both time each call alone between untimed barriers and report the
# largest over the ranks; Open MPI runs with its default binding, as in
# sidebyside.sh, and gocoll with its own. It prints, per collective, each
# side's median over the rounds of the mean, p50 and p99 in microseconds
# with the rounds' range, and gocoll's ratio to Open MPI of each median:
# below 1.0 gocoll is faster.
# BYTES sets the size (default 8). Further arguments are gocoll binaries (or
# wrappers that set an environment and exec one) to measure in turn instead
# of the checkout's own build, each named by its file name, so that two builds
# or settings alternate with Open MPI in one run.
# Example, from the project root: bench/reference/latency.sh shm 2 100000
# The machine is noisy: run enough rounds that the ranges tell the host's
# swings from a difference.
set -u
tr=$1 np=$2 iters=${3:-100000} bytes=${BYTES:-8} rounds=${ROUNDS:-3}
shift $(($# < 3 ? $# : 3))
anch=$(dirname "$(readlink -f "$0")")
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v mpicc >/dev/null || { echo "mpicc missing: apt-get install -y openmpi-bin libopenmpi-dev (or run run_anchors.sh beside this script once)"; exit 1; }
mpicc -O2 -o $tmp/mpilat $anch/mpi_latency.c 2>/dev/null || { echo "mpicc failed"; exit 1; }
builds=("$@")
if [ ${#builds[@]} = 0 ]; then
  go build -o $tmp/gocoll ./cmd/gocoll 2>/dev/null || { echo "cannot build cmd/gocoll"; exit 1; }
  builds=("$tmp/gocoll")
fi
if [ "$tr" = shm ]; then mca="--mca pml ob1 --mca btl self,vader"; else mca="--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo"; fi
over=""; [ "$np" -gt "$(nproc)" ] && over=--oversubscribe
for round in $(seq "$rounds"); do
  for i in "${!builds[@]}"; do
    "${builds[$i]}" bench -n $np --transport $tr --collectives allreduce,bcast --sizes $bytes --iters $iters --csv $tmp/ours$i.$round.csv >/dev/null 2>$tmp/err \
      || { echo "${builds[$i]} bench failed: $(tail -n 1 $tmp/err)"; exit 1; }
  done
  mpirun -np $np $over $mca $tmp/mpilat -i openmpi -t $tr -b $bytes -n $iters >$tmp/ref.$round.csv 2>$tmp/err \
    || { echo "mpirun failed: $(tail -n 1 $tmp/err)"; exit 1; }
done
names=(); for b in "${builds[@]}"; do names+=("$(basename "$b")"); done
python3 - $tmp "${names[@]}" <<'PY'
import csv, glob, statistics, sys
d, names = sys.argv[1], sys.argv[2:]
stats = ("avg_us", "p50_us", "p99_us")
def load(pattern):
    """Each collective's (mean, p50, p99) of every round's CSV."""
    v = {}
    for f in sorted(glob.glob(pattern)):
        for r in csv.DictReader(open(f)):
            v.setdefault(r["collective"], []).append(tuple(float(r[s]) for s in stats))
    return v
ref = load(f"{d}/ref.*.csv")
for coll in ("allreduce", "bcast"):
    if coll not in ref:
        continue
    med = lambda runs, j: statistics.median(x[j] for x in runs)
    span = lambda runs, j: f"{min(x[j] for x in runs):.3f}-{max(x[j] for x in runs):.3f}"
    print(f"{coll}: openmpi " + " ".join(f"{s[:-3]} {med(ref[coll], j):.3f} [{span(ref[coll], j)}]" for j, s in enumerate(stats)))
    for i, name in enumerate(names):
        ours = load(f"{d}/ours{i}.*.csv").get(coll)
        if not ours:
            continue
        print(f"{coll}: {name} " + " ".join(f"{s[:-3]} {med(ours, j):.3f} [{span(ours, j)}] ({med(ours, j) / med(ref[coll], j):.2f}x)" for j, s in enumerate(stats)))
PY
