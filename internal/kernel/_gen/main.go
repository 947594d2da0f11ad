// Command _gen writes the AVX2 and AVX-512 kernels of internal/kernel with avo. It is a
// module of its own, so that avo is never a dependency of gocoll, and its
// directory starts with an underscore, so that ./... in the main module
// skips it. Run it through go generate in internal/kernel:
//
//	go run -C _gen . -out ../kernels_amd64.s -stubs ../kernels_amd64.go -pkg kernel
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// instr emits one instruction. avo's instructions with AVX-512 forms are
// variadic and the others are not; two adapts the latter.
type instr func(ops ...Op)

func two(f func(a, b Op)) instr { return func(ops ...Op) { f(ops[0], ops[1]) } }

// elem is an element type as the kernels see it: how a vector of 32 bytes
// and how a single element move between memory and a register.
type elem struct {
	name   string // in the function name: addFloat32AVX2
	goType string
	size   int
	vmove  instr
	smove  instr
}

var (
	float32s = elem{"Float32", "float32", 4, VMOVUPS, VMOVSS}
	float64s = elem{"Float64", "float64", 8, VMOVUPD, VMOVSD}
	// Integers move in the integer domain: VMOVUPS would cost a bypass
	// delay on the way to VPADDD on some cores.
	int32s = elem{"Int32", "int32", 4, two(VMOVDQU), two(VMOVD)}
	int64s = elem{"Int64", "int64", 8, two(VMOVDQU), two(VMOVQ)}
)

// kernel is dst[i] = dst[i] ∘ src[i] on one element type. vop combines
// vectors; sop combines the single elements of the tail, loaded into
// registers first because VPADDD's memory operand is a whole vector and
// would read past the end of src.
type kernel struct {
	op       string // "add" or "mul", in the function name
	symbol   string // "+" or "*", in its doc comment
	elem     elem
	vop, sop instr
}

var kernels = []kernel{
	{"add", "+", float32s, VADDPS, VADDSS},
	{"add", "+", float64s, VADDPD, VADDSD},
	{"mul", "*", float32s, VMULPS, VMULSS},
	{"mul", "*", float64s, VMULPD, VMULSD},
	{"add", "+", int32s, VPADDD, VPADDD},
	{"add", "+", int64s, VPADDQ, VPADDQ},
}

// unroll is how many vectors the main loop combines per iteration: four
// independent load, op and store chains keep both load ports busy.
const unroll = 4

func main() {
	// avo wants the old comma syntax here and writes a //go:build line.
	// Race builds run the assembly too: its callers report what it reads
	// and writes to the race detector (package race).
	ConstraintExpr("amd64,gc,!purego,!noasm")
	for _, k := range kernels {
		k.generate()
	}
	encodeBF16()
	encodeRoundBF16()
	decodeBF16(false)
	encodeBF16AVX512()
	encodeRoundBF16AVX512()
	decodeBF16AVX512(false)
	for _, format := range []string{"BF16", "FP16"} {
		for _, wide := range []bool{false, true} {
			sumDecoded(format, wide, sums)
			sumDecoded(format, wide, sumsEncoded)
		}
	}
	encodeFP16()
	decodeFP16(false)
	copyNT()
	decodeBF16(true)
	decodeBF16AVX512(true)
	decodeFP16(true)
	for _, format := range []string{"BF16", "FP16"} {
		for _, wide := range []bool{false, true} {
			sumDecoded(format, wide, encodingsOnly)
		}
	}
	Generate()
}

// copyNT emits copyNTAVX2: 128 bytes a pass, loaded from src and stored
// with non-temporal stores, which write to memory around the caches
// instead of first taking the lines from the core that holds them.
func copyNT() {
	TEXT("copyNTAVX2", NOSPLIT, "func(dst, src []byte)")
	Pragma("noescape")
	Doc(
		"copyNTAVX2 copies len(dst) bytes, a multiple of 128, from src to dst,",
		"which is 32-byte aligned, with non-temporal stores, and fences them.",
	)
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())
	y := []reg.VecVirtual{YMM(), YMM(), YMM(), YMM()}
	Label("loop")
	CMPQ(n, U32(128))
	JB(LabelRef("done"))
	for i := range y {
		VMOVDQU(Mem{Base: src, Disp: 32 * i}, y[i])
	}
	for i := range y {
		VMOVNTDQ(y[i], Mem{Base: dst, Disp: 32 * i})
	}
	ADDQ(U32(128), src)
	ADDQ(U32(128), dst)
	SUBQ(U32(128), n)
	JMP(LabelRef("loop"))
	Label("done")
	SFENCE()
	VZEROUPPER()
	RET()
}

// generate emits one kernel: unroll vectors at a time, then one vector at a
// time, then one element at a time. Every load and store is unaligned and
// none touches memory past len(dst) elements.
func (k kernel) generate() {
	const vecBytes = 32
	e := k.elem
	lanes := vecBytes / e.size
	name := k.op + e.name + "AVX2"
	TEXT(name, NOSPLIT, fmt.Sprintf("func(dst, src []%s)", e.goType))
	Pragma("noescape")
	Doc(
		fmt.Sprintf("%s sets dst[i] = dst[i] %s src[i] for every i < len(dst).", name, k.symbol),
		"src must be at least as long as dst.",
	)
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())

	// vectors combines count vectors per iteration while n allows,
	// loading dst first so that it is the first operand, as in the Go
	// loop's dst[i] += src[i].
	vectors := func(label, next string, count int) {
		y := make([]reg.VecVirtual, count)
		for i := range y {
			y[i] = YMM()
		}
		Label(label)
		CMPQ(n, U32(count*lanes))
		JB(LabelRef(next))
		for i := range y {
			e.vmove(Mem{Base: dst, Disp: i * vecBytes}, y[i])
		}
		for i := range y {
			k.vop(Mem{Base: src, Disp: i * vecBytes}, y[i], y[i])
		}
		for i := range y {
			e.vmove(y[i], Mem{Base: dst, Disp: i * vecBytes})
		}
		ADDQ(U32(count*vecBytes), dst)
		ADDQ(U32(count*vecBytes), src)
		SUBQ(U32(count*lanes), n)
		JMP(LabelRef(label))
	}
	vectors("unrolled", "single", unroll)
	vectors("single", "tail", 1)

	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	a, b := XMM(), XMM()
	e.smove(Mem{Base: dst}, a)
	e.smove(Mem{Base: src}, b)
	k.sop(b, a, a)
	e.smove(a, Mem{Base: dst})
	ADDQ(U8(e.size), dst)
	ADDQ(U8(e.size), src)
	DECQ(n)
	JMP(LabelRef("tail"))

	Label("done")
	// Dirty upper YMM halves would slow down the SSE code Go runs next.
	VZEROUPPER()
	RET()
}

// encodeBF16 emits encodeBF16F32AVX2, the kernel of encodeBF16F32: 16
// float32 bit patterns at a time, each rounded to the nearest bfloat16
// (ties to even) exactly as codec.BFloat16FromFloat32 does, a NaN kept
// with its sign and top payload bits and made quiet. It converts the
// largest multiple of 16 elements and leaves the rest to the Go loop.
func encodeBF16() {
	encodeBF16Kernel("encodeBF16F32AVX2", false, []string{
		"encodeBF16F32AVX2 sets dst[i] to the bfloat16 nearest to the float32",
		"with bits src[i], as encodeBF16F32, for every i < len(src) rounded",
		"down to a multiple of 16. dst must be at least as long as src.",
	})
}

// encodeRoundBF16 emits encodeRoundBF16F32AVX2, the kernel of
// encodeRoundBF16F32: encodeBF16F32AVX2 that also stores each bfloat16
// back over its source as the float32 it decodes to, so that a sender
// that keeps what it sends reads its block once instead of encoding it
// and then decoding the payload.
func encodeRoundBF16() {
	encodeBF16Kernel("encodeRoundBF16F32AVX2", true, []string{
		"encodeRoundBF16F32AVX2 is encodeBF16F32AVX2 that also sets src[i] to",
		"the float32 bits of dst[i], as encodeRoundBF16F32.",
	})
}

// encodeBF16Kernel emits a bfloat16 encoding kernel named name with the
// doc comment doc; keep makes it store the rounded values over src too.
func encodeBF16Kernel(name string, keep bool, doc []string) {
	var rd bf16Rounder
	conversion(name, "func(dst []uint16, src []uint32)", "src", 16, 64, 32, doc, false,
		func() { rd = newBF16Rounder(false) },
		func(src, dst reg.Register) {
			x0, x1, r0, r1 := YMM(), YMM(), YMM(), YMM()
			VMOVDQU(Mem{Base: src}, x0)
			VMOVDQU(Mem{Base: src, Disp: 32}, x1)
			rd.round(x0, r0)
			rd.round(x1, r1)
			if keep {
				// x0 and x1 are read: they take the decoded values.
				VPSLLD(U8(16), r0, x0)
				VPSLLD(U8(16), r1, x1)
				VMOVDQU(x0, Mem{Base: src})
				VMOVDQU(x1, Mem{Base: src, Disp: 32})
			}
			packBF16(r0, r1, Mem{Base: dst})
		})
}

// packBF16 stores the zero-extended bfloat16 lanes of r0 and then r1, two
// 256-bit registers, as 16 words at m. Packing works within each 128-bit
// half: r0's and r1's first four words, then their last four. VPERMQ puts
// the quarters in order.
func packBF16(r0, r1 reg.VecVirtual, m Mem) {
	VPACKUSDW(r1, r0, r0)
	VPERMQ(U8(0xd8), r0, r0)
	VMOVDQU(r0, m)
}

// bf16Rounder rounds float32 lanes to bfloat16 exactly as
// codec.BFloat16FromFloat32 does, ties to even, a NaN kept with its sign
// and top payload bits and made quiet. Its constants live in vector
// registers for the whole kernel: 512-bit ones where wide.
type bf16Rounder struct {
	wide                       bool
	abs, inf, half, one, quiet reg.VecVirtual
}

// newBF16Rounder loads the rounding constants, in 512-bit registers where
// wide, in 256-bit ones otherwise.
func newBF16Rounder(wide bool) bf16Rounder {
	b := broadcast32
	if wide {
		b = broadcast32z
	}
	rd := bf16Rounder{wide: wide}
	rd.abs, rd.inf = b(0x7fffffff), b(0x7f800000)
	rd.half, rd.one, rd.quiet = b(0x7fff), b(1), b(0x40)
	return rd
}

// round leaves in r the bfloat16 of each lane of x, zero-extended. The
// 256-bit form blends a NaN's lanes in with VPBLENDVB, the 512-bit form
// with a mask register.
func (rd bf16Rounder) round(x, r reg.VecVirtual) {
	if rd.wide {
		t, m, nan := ZMM(), ZMM(), K()
		VPSRLD(U8(16), x, t)       // the kept bits
		VPANDD(rd.one, t, r)       // the lowest of them: odd or even
		VPADDD(rd.half, r, r)      // just under half a unit, plus one if odd
		VPADDD(x, r, r)            // carries into the kept bits when rounding up
		VPSRLD(U8(16), r, r)       // the rounded value
		VPANDD(rd.abs, x, m)       // |x|
		VPCMPGTD(rd.inf, m, nan)   // set where |x| > Inf: a NaN
		VPORD(rd.quiet, t, nan, r) // there, the NaN's kept bits made quiet
		return
	}
	t, m, q := YMM(), YMM(), YMM()
	VPSRLD(U8(16), x, t)   // the kept bits
	VPAND(rd.one, t, r)    // the lowest of them: odd or even
	VPADDD(rd.half, r, r)  // just under half a unit, plus one if odd
	VPADDD(x, r, r)        // carries into the kept bits when rounding up
	VPSRLD(U8(16), r, r)   // the rounded value
	VPOR(rd.quiet, t, q)   // a NaN's kept bits, made quiet
	VPAND(rd.abs, x, m)    // |x|
	VPCMPGTD(rd.inf, m, m) // all ones where |x| > Inf: a NaN
	VPBLENDVB(m, q, r, r)  // the NaN's bits there
}

// decodeStores is how a decoding kernel stores its results: through the
// caches, or, around, with non-temporal stores, which write to memory
// around them. A destination larger than the caches then costs one write
// to memory per line instead of a read (to own the line) and a write,
// and does not push out what the caches hold (kernel.DecodeAround).
// Non-temporal stores need a destination aligned to the vector, and a
// fence after them, which conversion emits.
type decodeStores struct {
	around bool
	name   string // the kernel's name: its base name, with "Around" around
	doc    []string
}

// newDecodeStores names the kernel base and, around, documents it as the
// twin of base that it is, whose dst must be aligned to its vectors of
// vecBytes.
func newDecodeStores(base string, around bool, vecBytes int, doc []string) decodeStores {
	if !around {
		return decodeStores{name: base, doc: doc}
	}
	return decodeStores{around: true, name: base + "Around", doc: []string{
		base + "Around is " + base + " with non-temporal stores,",
		fmt.Sprintf("which write to memory around the caches, into a dst aligned to %d", vecBytes),
		"bytes. It fences its stores.",
	}}
}

// store stores the vector v at m, as the kernel stores.
func (d decodeStores) store(v reg.VecVirtual, m Mem) {
	switch {
	case d.around:
		VMOVNTDQ(v, m)
	case v.Size() == 64:
		VMOVDQU32(v, m)
	default:
		VMOVDQU(v, m)
	}
}

// decodeBF16 emits decodeBF16F32AVX2, the kernel of decodeBF16F32: each
// bfloat16 widened to 32 bits and shifted into the top half, 16 at a
// time; or, around, its twin with non-temporal stores.
func decodeBF16(around bool) {
	d := newDecodeStores("decodeBF16F32AVX2", around, 32, []string{
		"decodeBF16F32AVX2 sets dst[i] to the float32 bits of the bfloat16",
		"src[i], as decodeBF16F32, for every i < len(dst) rounded down to a",
		"multiple of 16. src must be at least as long as dst.",
	})
	conversion(d.name, "func(dst []uint32, src []uint16)", "dst", 16, 32, 64, d.doc, d.around,
		func() {},
		func(src, dst reg.Register) {
			y0, y1 := YMM(), YMM()
			VPMOVZXWD(Mem{Base: src}, y0)
			VPMOVZXWD(Mem{Base: src, Disp: 16}, y1)
			VPSLLD(U8(16), y0, y0)
			VPSLLD(U8(16), y1, y1)
			d.store(y0, Mem{Base: dst})
			d.store(y1, Mem{Base: dst, Disp: 32})
		})
}

// encodeBF16AVX512 emits encodeBF16F32AVX512: encodeBF16F32AVX2 on 32
// elements a pass, in 512-bit registers, with a NaN's lanes chosen by a
// mask register instead of a blend. The same integer steps give the same
// bits; where the core runs 512-bit operations at full width they do
// twice the work per instruction.
func encodeBF16AVX512() {
	encodeBF16Kernel512("encodeBF16F32AVX512", false, []string{
		"encodeBF16F32AVX512 is encodeBF16F32AVX2 for every i < len(src)",
		"rounded down to a multiple of 32.",
	})
}

// encodeRoundBF16AVX512 emits encodeRoundBF16F32AVX512, which is to
// encodeBF16F32AVX512 what encodeRoundBF16F32AVX2 is to
// encodeBF16F32AVX2.
func encodeRoundBF16AVX512() {
	encodeBF16Kernel512("encodeRoundBF16F32AVX512", true, []string{
		"encodeRoundBF16F32AVX512 is encodeRoundBF16F32AVX2 for every i <",
		"len(src) rounded down to a multiple of 32.",
	})
}

// encodeBF16Kernel512 is encodeBF16Kernel in 512-bit registers, 32
// elements a pass.
func encodeBF16Kernel512(name string, keep bool, doc []string) {
	var rd bf16Rounder
	conversion(name, "func(dst []uint16, src []uint32)", "src", 32, 128, 64, doc, false,
		func() { rd = newBF16Rounder(true) },
		func(src, dst reg.Register) {
			x0, x1, r0, r1 := ZMM(), ZMM(), ZMM(), ZMM()
			VMOVDQU32(Mem{Base: src}, x0)
			VMOVDQU32(Mem{Base: src, Disp: 64}, x1)
			rd.round(x0, r0)
			rd.round(x1, r1)
			if keep {
				VPSLLD(U8(16), r0, x0)
				VPSLLD(U8(16), r1, x1)
				VMOVDQU32(x0, Mem{Base: src})
				VMOVDQU32(x1, Mem{Base: src, Disp: 64})
			}
			// Each lane holds its word zero-extended: truncating to 16
			// bits keeps it, and the stores keep the lanes in order.
			VPMOVDW(r0, Mem{Base: dst})
			VPMOVDW(r1, Mem{Base: dst, Disp: 32})
		})
}

// decodeBF16AVX512 emits decodeBF16F32AVX512: decodeBF16F32AVX2 on 32
// elements a pass, in 512-bit registers; or, around, its twin with
// non-temporal stores.
func decodeBF16AVX512(around bool) {
	d := newDecodeStores("decodeBF16F32AVX512", around, 64, []string{
		"decodeBF16F32AVX512 is decodeBF16F32AVX2 for every i < len(dst)",
		"rounded down to a multiple of 32.",
	})
	conversion(d.name, "func(dst []uint32, src []uint16)", "dst", 32, 64, 128, d.doc, d.around,
		func() {},
		func(src, dst reg.Register) {
			z0, z1 := ZMM(), ZMM()
			VPMOVZXWD(Mem{Base: src}, z0)
			VPMOVZXWD(Mem{Base: src, Disp: 32}, z1)
			VPSLLD(U8(16), z0, z0)
			VPSLLD(U8(16), z1, z1)
			d.store(z0, Mem{Base: dst})
			d.store(z1, Mem{Base: dst, Disp: 64})
		})
}

// What a kernel of sumDecoded keeps of each sum: the sum (SumDecoded),
// the sum rounded to the format and its encoding (SumDecoded with
// encode), or the encoding alone (SumEncoded).
type sumsKept int

const (
	sums sumsKept = iota
	sumsEncoded
	encodingsOnly
)

// sumDecoded emits the kernels of SumDecoded and SumEncoded for format,
// "BF16" or "FP16": each element of mine plus the float32 of the 16-bit
// value at the same index of src, stored in dst, two vectors a pass (16
// elements in 256-bit registers, 32 where wide). With sumsEncoded the sum
// is rounded to the format on the way, as encoding and decoding it would:
// its word goes to enc and what it decodes to to dst; with encodingsOnly
// its word goes to enc and nothing to dst, which the kernel does not
// take. That is a ring's receiving
// reduce-scatter step in one pass over its operands, where decoding into
// a scratch block, summing and encoding took three. mine is the first
// operand of VADDPS, as dst is in the add kernels, so that where dst is
// mine the sums, NaNs' payloads included, are what decoding and then
// Reduce give.
//
// bfloat16 widens by a shift and narrows by bf16Rounder. binary16 goes
// through F16C's conversions (AVX-512F's in 512-bit registers), rounding
// to nearest even as the instruction says. Where VCVTPH2PS makes a
// signalling NaN quiet and decodeFP16 restores its bits, the sum here
// needs no such care: adding makes the NaN quiet either way, and the
// binary16 NaNs the encoding makes are quiet already.
func sumDecoded(format string, wide bool, kept sumsKept) {
	lanes, vec, half, width := 8, YMM, XMM, "AVX2"
	if wide {
		lanes, vec, half, width = 16, ZMM, YMM, "AVX512"
	}
	if format == "FP16" && !wide {
		width = "F16C"
	}
	encode, store := kept != sums, kept != encodingsOnly
	what := map[string]string{"BF16": "bfloat16", "FP16": "binary16"}[format]
	base := "sumDecoded" + format + "F32" + width
	name, sig, n := base, "func(dst, mine []float32, src []uint16)", "dst"
	doc := []string{
		name + " sets dst[i] = mine[i] + the float32 of the " + what,
		"src[i], as SumDecoded, for every i < len(dst) rounded down to a",
		fmt.Sprintf("multiple of %d. mine and src must be at least as long as dst.", 2*lanes),
	}
	switch kept {
	case sumsEncoded:
		name, sig = "sumDecodedEncode"+format+"F32"+width, "func(dst, mine []float32, src, enc []uint16)"
		doc = []string{
			name + " is " + base + " that also",
			"rounds each sum to " + what + ": enc[i] takes its encoding and dst[i]",
			"what that decodes to, as encode" + format + "F32 and decode" + format + "F32 make them.",
			"enc must be at least as long as dst.",
		}
	case encodingsOnly:
		name, sig, n = "sumEncoded"+format+"F32"+width, "func(enc []uint16, mine []float32, src []uint16)", "enc"
		doc = []string{
			name + " sets enc[i] to the " + what + " encoding of the sum that",
			base + " makes, as SumEncoded, for every i < len(enc)",
			fmt.Sprintf("rounded down to a multiple of %d, and stores no sum. mine and src must", 2*lanes),
			"be at least as long as enc.",
		}
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(doc...)
	var dst reg.Register
	if store {
		dst = Load(Param("dst").Base(), GP64())
	}
	mine := Load(Param("mine").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	var enc reg.Register
	var rd bf16Rounder
	if encode {
		enc = Load(Param("enc").Base(), GP64())
		if format == "BF16" {
			rd = newBF16Rounder(wide)
		}
	}
	count := Load(Param(n).Len(), GP64())

	Label("loop")
	CMPQ(count, U32(2*lanes))
	JB(LabelRef("done"))
	var words [2]reg.VecVirtual
	for i := range words {
		d, m, from := vec(), vec(), Mem{Base: src, Disp: 2 * lanes * i}
		if format == "BF16" {
			VPMOVZXWD(from, d)   // a word a lane
			VPSLLD(U8(16), d, d) // into the float32's top half
		} else {
			VCVTPH2PS(from, d)
		}
		VMOVUPS(Mem{Base: mine, Disp: 4 * lanes * i}, m)
		VADDPS(d, m, m)
		switch {
		case encode && format == "BF16":
			words[i] = vec()
			rd.round(m, words[i])
			if store {
				VPSLLD(U8(16), words[i], m)
			}
		case encode:
			const toNearestEven = 0 // as in encodeFP16
			h := half()
			VCVTPS2PH(U8(toNearestEven), m, h)
			if store {
				VCVTPH2PS(h, m)
			}
			VMOVDQU(h, Mem{Base: enc, Disp: 2 * lanes * i})
		}
		if store {
			VMOVUPS(m, Mem{Base: dst, Disp: 4 * lanes * i})
		}
	}
	if encode && format == "BF16" {
		if wide {
			VPMOVDW(words[0], Mem{Base: enc})
			VPMOVDW(words[1], Mem{Base: enc, Disp: 2 * lanes})
		} else {
			packBF16(words[0], words[1], Mem{Base: enc})
		}
	}
	if encode {
		ADDQ(U32(4*lanes), enc)
	}
	if store {
		ADDQ(U32(8*lanes), dst)
	}
	ADDQ(U32(8*lanes), mine)
	ADDQ(U32(4*lanes), src)
	SUBQ(U32(2*lanes), count)
	JMP(LabelRef("loop"))

	Label("done")
	VZEROUPPER()
	RET()
}

// broadcast32z returns a 512-bit register holding v in each 32-bit lane.
func broadcast32z(v uint32) reg.VecVirtual {
	g, z := GP32(), ZMM()
	MOVL(U32(v), g)
	VPBROADCASTD(g, z)
	return z
}

// broadcast32 returns a vector register holding v in each 32-bit lane.
func broadcast32(v uint32) reg.VecVirtual {
	g, x, y := GP32(), XMM(), YMM()
	MOVL(U32(v), g)
	VMOVD(g, x)
	VPBROADCASTD(x, y)
	return y
}

// encodeFP16 emits encodeFP16F32F16C, the kernel of encodeFP16F32: 16
// float32 values at a time converted by the F16C instruction VCVTPS2PH,
// with its rounding given in the instruction (to nearest, ties to even)
// rather than taken from MXCSR. Its results are codec.Float16FromFloat32's
// for every input: gradual underflow, overflow to Inf from 65520 up, and
// a NaN kept with its sign and top payload bits and made quiet.
func encodeFP16() {
	const toNearestEven = 0 // bit 2 clear: the rounding of bits 0-1, not MXCSR's
	conversion("encodeFP16F32F16C", "func(dst []uint16, src []uint32)", "src", 16, 64, 32,
		[]string{
			"encodeFP16F32F16C sets dst[i] to the binary16 nearest to the float32",
			"with bits src[i], as encodeFP16F32, for every i < len(src) rounded",
			"down to a multiple of 16. dst must be at least as long as src.",
		},
		false,
		func() {},
		func(src, dst reg.Register) {
			x0, x1 := YMM(), YMM()
			VMOVDQU(Mem{Base: src}, x0)
			VMOVDQU(Mem{Base: src, Disp: 32}, x1)
			VCVTPS2PH(U8(toNearestEven), x0, Mem{Base: dst})
			VCVTPS2PH(U8(toNearestEven), x1, Mem{Base: dst, Disp: 16})
		})
}

// decodeFP16 emits decodeFP16F32F16C, the kernel of decodeFP16F32: 16
// binary16 values at a time widened by VCVTPH2PS, which is exact for
// every number. It makes a signalling NaN quiet, where
// codec.Float16.Float32 keeps a NaN's payload as it is, so lanes holding
// a NaN take codec.Float16.Float32's bits instead: the sign, the float32
// exponent of ones and the payload shifted into place.
func decodeFP16(around bool) {
	var abs, inf, exp32, sign reg.VecVirtual
	d := newDecodeStores("decodeFP16F32F16C", around, 32, []string{
		"decodeFP16F32F16C sets dst[i] to the float32 bits of the binary16",
		"src[i], as decodeFP16F32, for every i < len(dst) rounded down to a",
		"multiple of 16. src must be at least as long as dst.",
	})
	conversion(d.name, "func(dst []uint32, src []uint16)", "dst", 16, 32, 64, d.doc, d.around,
		func() {
			abs, inf, exp32, sign = broadcast32(0x7fff), broadcast32(0x7c00), broadcast32(0x7f800000), broadcast32(0x8000)
		},
		func(src, dst reg.Register) {
			// widen leaves in r the float32 bits of the 8 binary16 values at m.
			widen := func(m Mem, r reg.VecVirtual) {
				w, a, nan, s := YMM(), YMM(), YMM(), YMM()
				VCVTPH2PS(m, r)
				VPMOVZXWD(m, w)       // the binary16 bits, one a lane
				VPAND(abs, w, a)      // |x|
				VPCMPGTD(inf, a, nan) // all ones where |x| > Inf: a NaN
				VPSLLD(U8(13), a, a)  // exponent and payload into the float32 fields
				VPOR(exp32, a, a)     // the exponent all ones
				VPAND(sign, w, s)     // the sign
				VPSLLD(U8(16), s, s)  // into bit 31
				VPOR(s, a, a)         // the NaN as codec.Float16.Float32 makes it
				VPBLENDVB(nan, a, r, r)
			}
			y0, y1 := YMM(), YMM()
			widen(Mem{Base: src}, y0)
			widen(Mem{Base: src, Disp: 16}, y1)
			d.store(y0, Mem{Base: dst})
			d.store(y1, Mem{Base: dst, Disp: 32})
		})
}

// conversion emits a kernel that converts group elements a pass, as
// name with signature sig and the doc comment doc: it loads dst and src
// and, as n, the length of the parameter nParam, runs setup once (the
// constants), then body on src and dst while n >= group, stepping src by
// srcStep bytes and dst by dstStep, and, with fence, fences the stores.
// The rest is left to the Go loop.
func conversion(name, sig, nParam string, group, srcStep, dstStep int, doc []string, fence bool, setup func(), body func(src, dst reg.Register)) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(doc...)
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param(nParam).Len(), GP64())
	setup()

	Label("loop")
	CMPQ(n, U32(group))
	JB(LabelRef("done"))
	body(src, dst)
	ADDQ(U32(srcStep), src)
	ADDQ(U32(dstStep), dst)
	SUBQ(U32(group), n)
	JMP(LabelRef("loop"))

	Label("done")
	if fence {
		SFENCE()
	}
	VZEROUPPER()
	RET()
}
