package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLinkOptions: shared-memory links may copy large payloads once
// (CMA) unless single copies are off: always with cma, where that has
// been faster with auto.
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
