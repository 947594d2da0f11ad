package collective

import (
	"github.com/gocoll/gocoll/codec"
)

// Call is what one rank called (collective, count, element type, op,
// root, algorithm), as its frames carry it.
type Call = codec.Call
