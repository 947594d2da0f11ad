package kernel_test

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
)

func ExampleReduce() {
	// What a rank does with a neighbour's contribution.
	mine := []float32{1, 2, 3}
	theirs := []float32{10, 20, 30}
	if err := kernel.Reduce(codec.Sum, mine, theirs); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(mine)

	// Averages are sums until the end.
	kernel.Finish(codec.Avg, mine, 2)
	fmt.Println(mine)

	fmt.Println(kernel.Reduce(codec.Xor, mine, theirs))
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
	_ = kernel.Reduce(affine, low, high) // low = low ∘ high
	fmt.Println(low)

	low, high = []int64{1}, []int64{100}
	scratch := make([]int64, 1)
	_ = kernel.ReduceLeft(affine, low, high, scratch) // high = low ∘ high
	fmt.Println(high)
	// Output:
	// [102]
	// [102]
}
