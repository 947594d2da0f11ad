package mem_test

import (
	"testing"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/mem"
)

func TestConformance(t *testing.T) {
	// A mem link holds nothing: every write waits for its reader.
	linktest.TestTransport(t, func(t *testing.T) transport.Transport { return mem.NewNetwork().Transport() },
		linktest.WithLarge(4<<20))
}
