package collective

// The external tests (package collective_test) share the element-wise
// non-commutative op that the internal tests define.
var PackedMatMul = rsPackedMatMul

func PackedMatrices(r, n, seed int) []uint64 { return rsPackedMatrices(r, n, seed) }

// RaceEnabled tells the external tests whether the race detector is on.
const RaceEnabled = raceEnabled
