/*
Package kernel is the arithmetic behind the collectives: the reduction
loops ([Reduce], [ReduceLeft], [Finish], [Check]), the wire codecs
([Encode], [Decode], [Round], [MaxWireLen], [EncodeScratchLen],
[SumDecoded]), the
element types' wire names ([DType], [DTypeOf]) and the error bound of a
compressed sum ([RoundingBound]). Package codec defines what users see of
all this: the element types, the ops and the codec IDs.

# Reducing

[Reduce](op, dst, src) sets dst[i] = dst[i] ∘ src[i], with dst as the left
operand; [ReduceLeft](op, src, dst, scratch) sets dst[i] = src[i] ∘ dst[i].
An algorithm that keeps the higher ranks' partial result in its buffer
needs the second form to preserve rank order for a non-commutative op.
[Finish] completes Avg by dividing by the number of contributions; for
every other op it does nothing. [Check] says in advance whether an op
applies to a type. Errors from all of these wrap codec.ErrInvalid and
never leave dst half-written. The exact results are specified in
package codec's documentation.

# Wire compression

[Encode] and [Decode] move a slice through a codec without allocating
(once zstd has built its coders, on first use; where codec.Aliasing is false
the lossless codecs copy); Decode never writes past its destination and reports a payload its codec
cannot have produced with an error wrapping codec.ErrCorrupt. [Round] does to a
slice in place what a trip through a codec does, bit for bit, so that the
rank that sends a value can use the value its peers receive.

The lossy codecs round with unit roundoff

	u = 2^-8  for BF16 (8 significant bits)
	u = 2^-11 for FP16 (11 significant bits)

relative to the value: for x in the normal range of the format, and for
x = 0, Round(x) = x(1+δ) with |δ| ≤ u. BF16 has float32's range, so for
float32 data only values from (2-2^-8)·2^127 up overflow to ±Inf (this
includes MaxFloat32) and only float32 subnormals (below 2^-126) lose
relative accuracy, to an absolute error of at most 2^-134. FP16 overflows
to ±Inf from 65520 up (65504 is its largest finite value), and below 2^-14
it has subnormals with an absolute error of at most 2^-25. NaNs stay NaNs
with their sign, and ±Inf stays.

What that costs a sum: an allreduce computes s, the sum of x_1, …, x_N
over N ranks, in some order fixed by its algorithm. Write ε for the unit
roundoff of the accumulation (2^-24 for float32, 2^-53 for float64), so that
each addition gives fl(a+b) = (a+b)(1+ε_k) with |ε_k| ≤ ε, and each value
sent with a lossy codec is multiplied by (1+δ_j), |δ_j| ≤ u. Suppose every
contribution x_i passes at most N+1 codec roundings on its way into s (its
own rounding when first sent, at most N-1 hops that each round once, and
the final rounding of the result that every rank receives) and at most N
accumulation steps (N-1 additions, and the division of Avg). Forwarding a
value that is already rounded, as the allgather half of a ring allreduce
does with the result, rounds nothing: Round is idempotent. Each factor
applies to a partial sum, that is, to every x_i it contains, so

	s = Σ x_i·P_i,  P_i a product of at most N+1 factors (1+δ_j)
	                and at most N factors (1+ε_k).

Then |s - Σ x_i| = |Σ x_i·(P_i - 1)| ≤ max_i |P_i - 1| · Σ |x_i|. Expanding
P_i, each term is at most the corresponding term of (1+u)^(N+1)·(1+ε)^N in
magnitude, so

	|s - Σ x_i| ≤ ((1+u)^(N+1)·(1+ε)^N - 1) · Σ |x_i|.

Since 1+y ≤ e^y and e^t ≤ 1/(1-t) for 0 ≤ t < 1 (the bound Higham uses,
(1+u)^k ≤ 1/(1-ku)), with t = (N+1)·u + N·ε < 1

	(1+u)^(N+1)·(1+ε)^N - 1 ≤ e^t - 1 ≤ t/(1-t) = γ,

so |s - Σ x_i| ≤ γ·Σ |x_i| with γ = (N+1)·u + N·ε to first order. For BF16
and float32 accumulation that is about (N+1)·2^-8 relative to Σ|x_i|, about
0.004·(N+1): only the codec's term matters. [RoundingBound] returns γ for a
codec, element type and rank count, for tests that check a collective's
results. It says something while t < 1: up to 254 ranks for BF16 and 2046
for FP16. It is close to attained when every rounding goes the
same way (TestRoundingBoundChain builds such inputs). It assumes that no
rounded value overflows or is subnormal in the codec's format; each one
that is subnormal adds up to its absolute error (2^-134, 2^-25), times at
most 1+γ, to the bound.

# Performance

[Reduce], [ReduceLeft] and [Finish] switch on the element type once per
call and run one loop per op and type, with no interface or function-value
calls inside and no bounds checks, and they never allocate. The Go loops
are unrolled, since Go does not vectorise.

On amd64 CPUs with AVX2, Sum and Avg of float32, float64, int32 and int64
and Prod of float32 and float64 run assembly instead, which on data in
cache is about six times as fast. It does the same single IEEE operation
per element as the Go loop, so the results are bit for bit the same on
every machine. Min and Max stay in Go, as their NaN and ±0 rules are not
those of the vector instructions. The CPU is checked once at start-up. The
purego and noasm build tags leave the assembly out. Race builds keep it:
the race detector cannot see what assembly reads and writes, so each
kernel's caller reports those ranges to it (package race), and a buffer
written while a kernel uses it is reported as it would be with the Go
loops. Long slices are reduced 64 KiB at a time, so the goroutine stays
preemptible.

The lossy codecs' conversions of float32 run assembly too: BF16 with
AVX2 integer instructions, FP16 with F16C's VCVTPS2PH and VCVTPH2PS (on
CPUs with AVX2 and F16C), about 20 GB/s each way on data in cache against
2 GB/s for FP16's Go loops (BenchmarkEncode, BenchmarkDecode). They give
the Go conversions' bits for every input: VCVTPS2PH rounds as its
immediate says, to nearest even, whatever MXCSR holds, and where
VCVTPH2PS would make a signalling NaN quiet the kernel puts back the
NaN as codec.Float16.Float32 keeps it. On CPUs with AVX-512 the BF16
conversions take the same integer steps in 512-bit registers, 32
elements a pass: on this project's AMD host, which runs them at full
width, BF16 encoding went from 46 to 98 GB/s on a block in the
first-level cache and decoding from 130 to 177 GB/s. (AVX-512's own
VCVTNE2PS2BF16 would take fewer instructions still, but it flushes
subnormals to zero, which the BF16 codec keeps, and Go's assembler does
not know it.)

A ring's reduce-scatter decodes a peer's chunk, adds it to the rank's
own elements and encodes the sums to send them on. [SumDecoded] does the
three in one pass over the operands, for float32 in BF16 or FP16, with
the same conversions in 256-bit (F16C for FP16) or 512-bit registers and
one VADDPS, the rank's element its first operand as dst is Reduce's:
separate passes through the caches took 1.6 to 4 times as long
(BenchmarkSumDecoded), and on data from memory each pass is a trip
there and back.

The half-precision kernels convert every element and run several times
slower per byte than float32 ones (BenchmarkSum measures both), so a
collective that sends float32 data as BF16 should reduce in float32 and
convert once.
*/
package kernel
