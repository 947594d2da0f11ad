package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLinkOptions: shared-memory links copy large payloads once (CMA)
// unless single copies are off.
func TestLinkOptions(t *testing.T) {
	for _, tc := range []struct {
		singleCopy string
		cma        bool
	}{
		{SingleCopyAuto, true},
		{SingleCopyCMA, true},
		{SingleCopyNone, false},
	} {
		t.Run(tc.singleCopy, func(t *testing.T) {
			assert.Equal(t, tc.cma, len(linkOptions(tc.singleCopy)) == 1)
		})
	}
}
