#!/usr/bin/env bash
# sidebyside.sh TRANSPORT NP "coll,coll" "size,size" MIN_RATIO SMALL_MAX [EXTRA_GOCOLL_FLAGS]
# Runs Open MPI (mpi_coll_bench.c) and gocoll bench alternately, 3 rounds, in the project checkout (cwd);
# prints the busbw ratios (gocoll/Open MPI) of the medians, and the 8 B time ratio when 8 is among the sizes.
# Exit 0 when every size >= 64 KiB has ratio >= MIN_RATIO and the 8 B time ratio <= SMALL_MAX.
# Example, from the project root: bench/reference/sidebyside.sh tcp 2 allreduce,bcast,gather 8,65536,1048576,16777216 1.0 1.0
# The machine is noisy: a ratio within about 30 % of 1.0 is not a result; run it again.
# Both sides make 0.3 times their usual number of calls a point (SCALE=1 for all of
# them): a 1 MiB point is then some 80 calls, in which a first slow call or a choice
# still being learned (shared memory's single copy) weighs more than in a long job.
set -u
tr=$1 np=$2 colls=$3 sizes=$4 minr=$5 smallmax=$6 extra=${7:-} scale=${SCALE:-0.3}
anch=$(dirname "$(readlink -f "$0")")
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v mpicc >/dev/null || { echo "mpicc missing: apt-get install -y openmpi-bin libopenmpi-dev (or run run_anchors.sh beside this script once)"; exit 1; }
mpicc -O2 -o $tmp/mpib $anch/mpi_coll_bench.c 2>/dev/null || { echo "mpicc failed"; exit 1; }
{ go build -o $tmp/gocoll ./cmd/gocoll || { [ -f cmd/gocoll/go.mod ] && (cd cmd/gocoll && go build -o $tmp/gocoll .); }; } 2>/dev/null || { echo "cannot build cmd/gocoll"; exit 1; }
if [ "$tr" = shm ]; then mca="--mca pml ob1 --mca btl self,vader"; else mca="--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo"; fi
over=""; [ "$np" -gt "$(nproc)" ] && over=--oversubscribe
max=$(echo "$sizes" | tr , '\n' | sort -n | tail -n 1)
for round in 1 2 3; do
  $tmp/gocoll bench -n $np --transport $tr --collectives $colls --sizes $sizes --scale $scale $extra --csv $tmp/ours$round.csv >/dev/null 2>$tmp/err \
    || { echo "gocoll bench failed: $(tail -n 1 $tmp/err)"; exit 1; }
  mpirun -np $np $over $mca $tmp/mpib -i openmpi -t $tr -m $max -s $scale -c $colls >$tmp/ref$round.csv 2>$tmp/err \
    || { echo "mpirun failed: $(tail -n 1 $tmp/err)"; exit 1; }
done
python3 - $tmp "$colls" "$sizes" $minr $smallmax <<'PY'
import glob, statistics, sys
d, colls, sizes, minr, smallmax = sys.argv[1], sys.argv[2].split(","), [int(s) for s in sys.argv[3].split(",")], float(sys.argv[4]), float(sys.argv[5])
def load(pat):
    v = {}
    for f in glob.glob(pat):
        hdr = ["impl", "transport", "np", "collective", "bytes", "avg_us", "algbw_GBps", "busbw_GBps"]
        for line in open(f):
            p = line.strip().split(",")
            if p[0] == "impl": hdr = p; continue
            if hdr is None or len(p) < 8 or not p[4].isdigit(): continue
            r = dict(zip(hdr, p))
            v.setdefault((r["collective"], int(r["bytes"])), []).append((float(r["avg_us"]), float(r["busbw_GBps"])))
    return {k: (statistics.median(t for t, _ in x), statistics.median(b for _, b in x)) for k, x in v.items()}
ours, ref = load(d + "/ours*.csv"), load(d + "/ref*.csv")
out, bad = [], []
for c in colls:
    for s in sizes:
        k = (c, s)
        if k not in ours or k not in ref: continue
        if s < 65536:
            r = ours[k][0] / ref[k][0]; out.append(f"{c}@{s}B={r:.2f}xT")
            if r > smallmax: bad.append(out[-1])
        else:
            r = ours[k][1] / ref[k][1] if ref[k][1] > 0 else 0; out.append(f"{c}@{s >> 10}K={r:.2f}x")
            if r < minr: bad.append(out[-1])
if not out: print("no comparable points"); sys.exit(1)
print(("short: " + " ".join(bad) + " | all: " if bad else "") + " ".join(out))
sys.exit(1 if bad else 0)
PY
