package codec_test

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
)

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

func ExampleBFloat16FromFloat32() {
	for _, f := range []float32{1, 0.1, 3.14159, 1e38, 65520} {
		fmt.Println(f, codec.BFloat16FromFloat32(f), codec.Float16FromFloat32(f))
	}
	// Output:
	// 1 1 1
	// 0.1 0.100097656 0.099975586
	// 3.14159 3.140625 3.140625
	// 1e+38 9.96921e+37 +Inf
	// 65520 65536 +Inf
}

func ExampleParse() {
	for _, name := range []string{"bf16", "zstd", "lz4"} {
		id, err := codec.Parse(name)
		fmt.Println(id, id.Lossy(), err)
	}
	// Output:
	// bf16 true <nil>
	// zstd false <nil>
	// none false invalid input: unknown codec "lz4" (want one of [none bf16 fp16 zstd s2])
}
