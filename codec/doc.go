/*
Package codec is what gocoll knows about data, apart from moving it: the
element types a collective moves, how they look on the wire, the
reduction operations that combine them, and the codecs that compress
them in flight.

Nothing here talks to another process. Package comm moves bytes between
ranks and package collective uses this package's types to move and
combine typed slices.

# Element types and views

[Elem] is the set of element types: the sized integers int8 to uint64,
float32, float64, and the 16-bit floats [BFloat16] and [Float16].

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
	st, err := c.Recv(ctx, src, tag, b)
	if err != nil {
		return err
	}
	codec.Store(s, b[:st.Bytes])

comm.Send and comm.Recv do this for typed slices.

# Half precision

[BFloat16] is the top half of a float32: float32's range with 8 bits of
precision, the format of most machine-learning accelerators. [Float16] is
IEEE 754 binary16: 11 bits of precision, a largest finite value of 65504
and subnormals down to 2^-24. Both halve the bytes of float32 data on the
wire.

[BFloat16FromFloat32] and [Float16FromFloat32] round to the nearest value,
ties to even, as IEEE 754 requires, and so do [BFloat16FromFloat64] and
[Float16FromFloat64], once, directly from the float64: values past the
largest finite one become ±Inf, tiny values become subnormals or ±0 with
their sign, and a NaN stays a NaN with its sign and the top bits of its
payload, made quiet. Widening with [BFloat16.Float32] and
[Float16.Float32] is exact, so every 16-bit pattern survives a round trip
through float32 (NaNs come back quiet).

# Compression codecs

An [ID] names a codec for collective.WithCompression. [Zstd] and [S2] are
lossless and apply to every element type; a payload they do not shrink
goes raw, as [None], so a compressed payload is never larger than the raw
one. [BF16] and [FP16] are lossy and apply to float32 and float64 data
only: each value travels as the nearest [BFloat16] or [Float16], ties to
even, rounded once from the value, in two bytes. A peer's payload that its
codec cannot have produced fails the collective with an error wrapping
[ErrCorrupt].

The lossy codecs round with unit roundoff u = 2^-8 (BF16) or 2^-11 (FP16)
relative to the value, within the format's normal range: BF16 has
float32's range; FP16 overflows to ±Inf from 65520 up and has subnormals
below 2^-14. NaNs stay NaNs with their sign, and ±Inf stays. A compressed
allreduce sum s of x_1, …, x_N over N ranks satisfies

	|s - Σ x_i| ≤ γ · Σ |x_i|,  γ ≈ (N+1)·u

(exactly γ = t/(1-t) with t = (N+1)·u + N·ε, ε the unit roundoff of the
element type), because every value is rounded at most once per hop and
the algorithms never round a value that was already rounded. For BF16
that is about 0.004·(N+1) relative to Σ|x_i|. The derivation is in the
source of internal/kernel, and collective's tests hold every algorithm
to it.

# Reduction ops

An [Op] combines two contributions element by element. The predefined ops
are [Sum], [Prod], [Min], [Max], [Avg] and, for integers only, [And], [Or]
and [Xor]; [NewOp] makes a user op from a func(dst, src []T). A
collective given an op that does not apply to its element type (a bitwise
op on floats, a user op made for another type) fails with an error
wrapping [ErrInvalid] before anything is sent.

The results are defined exactly:

  - Integer Sum and Prod wrap around in two's complement, as Go's + and *
    do. Avg divides the wrapped sum by n, truncating toward zero.
  - Float Sum and Prod are one IEEE operation of the element's own type:
    float32 data is added in float32, not widened. BF16 and Float16 are
    widened to float32 (exactly), combined, and rounded back once per
    combining step. Avg on floats divides (it does not multiply by 1/n), so
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

Reductions switch on the element type once per chunk and run one loop per
op and type, without allocating; on amd64 CPUs with AVX2, Sum, Avg and
Prod of the common types run vector code with the same IEEE operation per
element, so results are bit for bit the same on every machine. The
half-precision types convert every element and reduce several times
slower per byte than float32, so a trainer that wants half the traffic
should keep float32 buffers and send them with [BF16] compression.
*/
package codec
