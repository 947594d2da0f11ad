#!/usr/bin/env bash
# shaped.sh RATE "bytes,bytes" "codec,codec" [ROUNDS]
# Measures gocoll's two-rank Allreduce over tcp across a link slower than
# memory: two network namespaces that this script creates, joined by a veth
# pair whose both ends are shaped to RATE with tc's token bucket (e.g. 10gbit),
# a rank in each, started by `gocoll run --nnodes 2` and named a host of
# its own (GOCOLL_HOST), as two machines would be. For each round, each
# size and each codec in turn (so that codecs alternate) it runs
# examples/allreduce and prints its busbw; then the median per size and
# codec and each codec's ratio to the first one. Each run times 512 MiB of
# calls (at least 20): with 20 calls a point, a 1 MiB point lasted 40 ms,
# and on a two-vCPU VM one round's BF16 took 0.31 GB/s and another's 1.74.
# Needs root (ip netns, tc).
# The namespaces and every process go when the script ends, also on failure
# or Ctrl-C.
# Example, from the project root: bench/reference/shaped.sh 10gbit 1048576,16777216 none,bf16
set -u
rate=$1 sizes=$2 codecs=$3 rounds=${4:-3}
[ "$(id -u)" = 0 ] || { echo "shaped.sh needs root: it creates network namespaces"; exit 1; }
command -v tc >/dev/null || { echo "tc missing: apt-get install -y iproute2"; exit 1; }
tmp=$(mktemp -d)
a=gocoll-shaped-a-$$ b=gocoll-shaped-b-$$
cleanup() {
	ip netns pids $a 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns pids $b 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns del $a 2>/dev/null
	ip netns del $b 2>/dev/null
	rm -rf $tmp
}
trap cleanup EXIT
trap 'exit 130' INT TERM
go build -o $tmp/gocoll ./cmd/gocoll && go build -o $tmp/allreduce ./examples/allreduce || { echo "cannot build"; exit 1; }
ip netns add $a && ip netns add $b || exit 1
ip link add veth-$$-a netns $a type veth peer name veth-$$-b netns $b || exit 1
ip -n $a addr add 10.77.0.1/24 dev veth-$$-a && ip -n $b addr add 10.77.0.2/24 dev veth-$$-b
for ns in $a $b; do ip -n $ns link set lo up; done
ip -n $a link set veth-$$-a up && ip -n $b link set veth-$$-b up
tc -n $a qdisc add dev veth-$$-a root tbf rate $rate burst 4mb latency 20ms || exit 1
tc -n $b qdisc add dev veth-$$-b root tbf rate $rate burst 4mb latency 20ms || exit 1
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >$tmp/secret
port=29571
for round in $(seq $rounds); do
	for size in ${sizes//,/ }; do
		calls=$(((512 << 20) / size))
		[ $calls -ge 20 ] || calls=20
		for c in ${codecs//,/ }; do
			for node in 0 1; do
				ns=$a; [ $node = 1 ] && ns=$b
				GOCOLL_HOST=node$node GOCOLL_CODEC=$c ip netns exec $ns $tmp/gocoll run -n 1 --transport tcp --nnodes 2 --node-rank $node \
					--master 10.77.0.1:$port --secret-file $tmp/secret $tmp/allreduce -bytes $size -rounds $calls \
					>$tmp/out.$node 2>&1 &
			done
			wait
			bw=$(grep -o 'busbw [0-9.]*' $tmp/out.0 | cut -d' ' -f2)
			[ -n "$bw" ] || { echo "run failed:"; tail -n 3 $tmp/out.0 $tmp/out.1; exit 1; }
			echo "round $round: $size bytes, $c: busbw $bw GB/s"
			echo "$size $c $bw" >>$tmp/all
			port=$((port + 1))
		done
	done
done
python3 - $tmp/all "$codecs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
codecs = sys.argv[2].split(",")
for size in sorted({int(r[0]) for r in rows}):
    med = {c: statistics.median(float(r[2]) for r in rows if int(r[0]) == size and r[1] == c) for c in codecs}
    base = med[codecs[0]]
    print(f"{size} bytes: " + ", ".join(f"{c} {med[c]:.2f} GB/s ({med[c] / base:.2f}x)" for c in codecs))
PY
