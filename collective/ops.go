package collective

import "github.com/gocoll/gocoll/codec"

// The reduction ops, re-exported from codec so that a program that only
// reduces needs one import. Avg sums and then divides by the number of
// ranks once, at the end; And, Or and Xor take integer types only.
var (
	Sum  = codec.Sum
	Prod = codec.Prod
	Min  = codec.Min
	Max  = codec.Max
	Avg  = codec.Avg
	And  = codec.And
	Or   = codec.Or
	Xor  = codec.Xor
)
