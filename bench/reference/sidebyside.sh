#!/usr/bin/env bash
# sidebyside.sh TRANSPORT NP "coll,coll" "size,size" MIN_RATIO SMALL_MAX [EXTRA_GOCOLL_FLAGS]
# Runs Open MPI (mpi_coll_bench.c) and gocoll bench alternately, 3 rounds (ROUNDS=n for more), in the
# project checkout (cwd); prints the busbw ratios (gocoll/Open MPI) of the medians, and the time ratio
# of the sizes below 64 KiB, each followed by the range of the ratios of the rounds taken one by one
# (round i of gocoll against round i of Open MPI), which shows how far the host's noise moves it.
# Exit 0 when every size >= 64 KiB has ratio >= MIN_RATIO and the 8 B time ratio <= SMALL_MAX.
# Example, from the project root: bench/reference/sidebyside.sh tcp 2 allreduce,bcast,gather 8,65536,1048576,16777216 1.0 1.0
# The machine is noisy: a ratio within about 30 % of 1.0 is not a result; run it again, or with more
# rounds.
# Both sides make 0.3 times their usual number of calls a point (SCALE=1 for all of
# them): a 1 MiB point is then some 80 calls, in which a first slow call or a choice
# still being learned (shared memory's single copy) weighs more than in a long job.
set -u
tr=$1 np=$2 colls=$3 sizes=$4 minr=$5 smallmax=$6 extra=${7:-} scale=${SCALE:-0.3} rounds=${ROUNDS:-3}
anch=$(dirname "$(readlink -f "$0")")
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v mpicc >/dev/null || { echo "mpicc missing: apt-get install -y openmpi-bin libopenmpi-dev (or run run_anchors.sh beside this script once)"; exit 1; }
mpicc -O2 -o $tmp/mpib $anch/mpi_coll_bench.c 2>/dev/null || { echo "mpicc failed"; exit 1; }
{ go build -o $tmp/gocoll ./cmd/gocoll || { [ -f cmd/gocoll/go.mod ] && (cd cmd/gocoll && go build -o $tmp/gocoll .); }; } 2>/dev/null || { echo "cannot build cmd/gocoll"; exit 1; }
if [ "$tr" = shm ]; then mca="--mca pml ob1 --mca btl self,vader"; else mca="--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo"; fi
over=""; [ "$np" -gt "$(nproc)" ] && over=--oversubscribe
max=$(echo "$sizes" | tr , '\n' | sort -n | tail -n 1)
for round in $(seq "$rounds"); do
  $tmp/gocoll bench -n $np --transport $tr --collectives $colls --sizes $sizes --scale $scale $extra --csv $tmp/ours$round.csv >/dev/null 2>$tmp/err \
    || { echo "gocoll bench failed: $(tail -n 1 $tmp/err)"; exit 1; }
  mpirun -np $np $over $mca $tmp/mpib -i openmpi -t $tr -m $max -s $scale -c $colls >$tmp/ref$round.csv 2>$tmp/err \
    || { echo "mpirun failed: $(tail -n 1 $tmp/err)"; exit 1; }
done
python3 - $tmp "$colls" "$sizes" $minr $smallmax $rounds <<'PY'
import statistics, sys
d, colls, sizes, minr, smallmax, rounds = sys.argv[1], sys.argv[2].split(","), [int(s) for s in sys.argv[3].split(",")], float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
def load(name):
    """The (avg_us, busbw) of every point of each round's CSV, by round."""
    runs = []
    for i in range(1, rounds + 1):
        v, hdr = {}, ["impl", "transport", "np", "collective", "bytes", "avg_us", "algbw_GBps", "busbw_GBps"]
        for line in open(f"{d}/{name}{i}.csv"):
            p = line.strip().split(",")
            if p[0] == "impl": hdr = p; continue
            if len(p) < 8 or not p[4].isdigit(): continue
            r = dict(zip(hdr, p))
            v[(r["collective"], int(r["bytes"]))] = (float(r["avg_us"]), float(r["busbw_GBps"]))
        runs.append(v)
    return runs
ours, ref = load("ours"), load("ref")
def ratio(o, m, small):
    """gocoll's time over Open MPI's below 64 KiB, its busbw over theirs above."""
    if small: return o[0] / m[0]
    return o[1] / m[1] if m[1] > 0 else 0
def medians(points):
    points = list(points)
    return statistics.median(t for t, _ in points), statistics.median(b for _, b in points)
out, bad = [], []
for c in colls:
    for s in sizes:
        k, small = (c, s), s < 65536
        pairs = [(o[k], m[k]) for o, m in zip(ours, ref) if k in o and k in m]
        if not pairs: continue
        r = ratio(medians(o for o, _ in pairs), medians(m for _, m in pairs), small)
        each = [ratio(o, m, small) for o, m in pairs]
        name = f"{c}@{s}B" if small else f"{c}@{s >> 10}K"
        out.append(f"{name}={r:.2f}x{'T' if small else ''}[{min(each):.2f}-{max(each):.2f}]")
        if small and r > smallmax or not small and r < minr: bad.append(out[-1])
if not out: print("no comparable points"); sys.exit(1)
print(("short: " + " ".join(bad) + " | all: " if bad else "") + " ".join(out))
sys.exit(1 if bad else 0)
PY
