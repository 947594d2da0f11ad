/*
Package codec is what gocoll knows about data without knowing about peers:
the element types a collective moves, how they look on the wire, the
reduction operations that combine them, and the fixed header in front of
every message.

Nothing here talks to another process. Package transport moves headers and
payloads, package comm matches them, and package collective uses this
package to turn typed slices into payloads and to combine what arrives.

# Element types and views

[Elem] is the set of element types: the sized integers int8 to uint64,
float32, float64, and the 16-bit floats [BF16] and [Float16]. Each has a
[DType] that names it in a frame header; [DTypeOf] maps a Go type to it.

On the wire a []T is its elements' little-endian bytes, nothing more.
[Bytes] gives those bytes and [FromBytes] takes them back. On little-endian
hosts (amd64, arm64, riscv64, ppc64le, and the rest) they are views: the
byte slice and the typed slice share memory, and neither function copies
or allocates, so a collective sends and receives straight from and into
the caller's buffer. With the purego or nounsafe build tag, and on
big-endian hosts, they make little-endian copies instead; the constant
[Aliasing] says which build is in use.

Code that receives into Bytes(s) must call [Store] afterwards to be
portable; where views exist Store sees that the bytes already are s and
does nothing:

	b := codec.Bytes(s)
	n, err := c.Recv(ctx, src, tag, b)
	if err != nil {
		return err
	}
	codec.Store(s, b[:n])

# Half precision

[BF16] is the top half of a float32: float32's range with 8 bits of
precision, the format of most machine-learning accelerators. [Float16] is
IEEE 754 binary16: 11 bits of precision, a largest finite value of 65504
and subnormals down to 2^-24. Both halve the bytes of float32 data on the
wire.

[BF16FromFloat32] and [Float16FromFloat32] round to the nearest value,
ties to even, as IEEE 754 requires, and so do [BF16FromFloat64] and
[Float16FromFloat64], once, directly from the float64: values past the largest finite one
become ±Inf, tiny values become subnormals or ±0 with their sign, and a NaN
stays a NaN with its sign and the top bits of its payload, made quiet.
Widening with [BF16.Float32] and [Float16.Float32] is exact, so every 16-bit
pattern survives a round trip through float32 (NaNs come back quiet).

# Wire compression

A payload can travel compressed ([CodecID], compress.go). [CodecZstd] and
[CodecS2] are lossless and apply to every element type; a payload they do
not shrink goes raw, as [CodecNone], so a compressed payload is always
smaller than the raw one and the frame header's validation holds frames to that.
[CodecBF16] and [CodecFP16] are lossy and apply to float32 and float64 data
only ([CodecID.Check]): each value travels as the nearest [BF16] or
[Float16], ties to even, rounded once from the value (a float64 is not
rounded to float32 first, which would round twice), in two bytes.

[Encode] and [Decode] move a slice through a codec without allocating
(once zstd has built its coders, on first use; where [Aliasing] is false
the lossless codecs copy); Decode never writes past its destination and reports a payload its codec
cannot have produced with an error wrapping [ErrCorrupt]. [Round] does to a
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

# Reduction ops

An [Op] combines two contributions element by element. The predefined ops
are [Sum], [Prod], [Min], [Max], [Avg] and, for integers only, [And], [Or]
and [Xor]; [NewOp] makes a user op from a func(dst, src []T).

[Reduce](op, dst, src) sets dst[i] = dst[i] ∘ src[i], with dst as the left
operand; [ReduceLeft](op, src, dst, scratch) sets dst[i] = src[i] ∘ dst[i].
An algorithm that keeps the higher ranks' partial result in its buffer
needs the second form to preserve rank order for a non-commutative op.
[Finish] completes Avg by dividing by the number of contributions; for
every other op it does nothing. [Op.Check] says in advance whether an op
applies to a type. Errors from all of these wrap [ErrInvalid] and never
leave dst half-written.

The results are defined exactly:

  - Integer Sum and Prod wrap around in two's complement, as Go's + and *
    do. Avg divides the wrapped sum by n, truncating toward zero.
  - Float Sum and Prod are one IEEE operation of the element's own type:
    float32 data is added in float32, not widened. BF16 and Float16 are
    widened to float32 (exactly), combined, and rounded back once per
    Reduce call. Avg on floats divides (it does not multiply by 1/n), so
    the quotient is correctly rounded.
  - A NaN operand makes Sum, Prod and Avg NaN. Go leaves the payload of a
    NaN produced by arithmetic unspecified, so which NaN is not promised.
  - Min and Max propagate NaN: if the left operand is a NaN the result is
    that NaN, else if the right one is, that one. A NaN in any rank's
    contribution therefore makes the result NaN, as with Go's built-in min
    and max and IEEE 754-2019 minimum and maximum (and unlike C's fmin,
    which drops NaNs).
  - Min treats -0 as smaller than +0 and Max treats +0 as larger, in either
    operand order, so Min(-0, +0) is -0 and Max(-0, +0) is +0.
  - Min and Max always return one of their operands bit for bit, for
    every type, so their result does not depend on the compiler or the
    machine.

# Determinism

Floating-point Sum and Prod are commutative but not associative: the
result depends on how contributions are grouped. Every collective fixes
the grouping for a given algorithm, rank count and buffer length, and
computes each element once before distributing it, so all ranks of one
call get bitwise identical results. Two different algorithms, chunk
sizes or rank counts may differ in the last bits, as in MPI and NCCL.

A non-commutative user op is combined in rank order, r0 ∘ r1 ∘ … ∘ rN-1;
it must still be associative, because algorithms choose the grouping.

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
purego and noasm build tags leave the assembly out, and so does the race
detector, which cannot see memory accesses made by assembly and checks the
Go loops instead. Long slices are reduced 64 KiB at a time, so the
goroutine stays preemptible.

The half-precision kernels convert every element and run several times
slower per byte than float32 ones (BenchmarkSum measures both), so a
collective that sends float32 data as BF16 should reduce in float32 and
convert once.
*/
package codec
