package codec_test

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
)

func ExampleReduce() {
	// What a rank does with a neighbour's contribution.
	mine := []float32{1, 2, 3}
	theirs := []float32{10, 20, 30}
	if err := codec.Reduce(codec.Sum, mine, theirs); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(mine)

	// Averages are sums until the end.
	codec.Finish(codec.Avg, mine, 2)
	fmt.Println(mine)

	fmt.Println(codec.Reduce(codec.Xor, mine, theirs))
	// Output:
	// [11 22 33]
	// [5.5 11 16.5]
	// invalid input: op xor is not defined for float32
}

func ExampleReduceLeft() {
	// An order-sensitive op, x ∘ y = 2x + y. Whichever rank keeps the
	// result, low ∘ high is computed in rank order.
	affine := codec.NewOp("affine", func(dst, src []int64) {
		for i := range dst {
			dst[i] = 2*dst[i] + src[i]
		}
	}, false)

	low, high := []int64{1}, []int64{100}
	_ = codec.Reduce(affine, low, high) // low = low ∘ high
	fmt.Println(low)

	low, high = []int64{1}, []int64{100}
	scratch := make([]int64, 1)
	_ = codec.ReduceLeft(affine, low, high, scratch) // high = low ∘ high
	fmt.Println(high)
	// Output:
	// [102]
	// [102]
}

func ExampleBytes() {
	s := []uint16{0x0102, 0x0304}
	fmt.Printf("% x\n", codec.Bytes(s))

	back, err := codec.FromBytes[uint16]([]byte{0x02, 0x01, 0x04, 0x03})
	fmt.Printf("%#x %v\n", back, err)

	_, err = codec.FromBytes[uint16]([]byte{1, 2, 3})
	fmt.Println(err)
	// Output:
	// 02 01 04 03
	// [0x102 0x304] <nil>
	// invalid input: 3 bytes is not a whole number of 2-byte uint16 elements
}

func ExampleBF16FromFloat32() {
	for _, f := range []float32{1, 0.1, 3.14159, 1e38, 65520} {
		fmt.Println(f, codec.BF16FromFloat32(f), codec.Float16FromFloat32(f))
	}
	// Output:
	// 1 1 1
	// 0.1 0.100097656 0.099975586
	// 3.14159 3.140625 3.140625
	// 1e+38 9.96921e+37 +Inf
	// 65520 65536 +Inf
}
