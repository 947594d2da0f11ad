package hugepage

import (
	"errors"
	"sync"
	"testing"
	"unsafe"
)

// asked is what a fake collapse was asked: the regions' start and length.
type asked struct{ addr, n uintptr }

// fake is a Collapser whose collapses are recorded, and fail with err.
func fake(err error) (*Collapser, *[]asked) {
	var got []asked
	return &Collapser{Collapse: func(addr, n uintptr) error {
		got = append(got, asked{addr, n})
		return err
	}}, &got
}

// regionsOf is the aligned regions around b: what Use collapses.
func regionsOf(b []byte) asked {
	start, n := Around(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	return asked{start, n}
}

func TestAround(t *testing.T) {
	tests := []struct{ addr, n, start, length uintptr }{
		{Size, Min, Size, Size},                  // at a region's start
		{Size + 8, Size - 8, Size, Size},         // to its end
		{Size + 8, Size, Size, 2 * Size},         // past it
		{3*Size - 1, 2, 2 * Size, 2 * Size},      // across a boundary
		{5 * Size, 3 * Size, 5 * Size, 3 * Size}, // whole regions
	}
	for _, tt := range tests {
		if start, length := Around(tt.addr, tt.n); start != tt.start || length != tt.length {
			t.Errorf("Around(%#x, %#x) = %#x, %#x; want %#x, %#x", tt.addr, tt.n, start, length, tt.start, tt.length)
		}
	}
}

func TestUseCollapsesBuffersThatComeBack(t *testing.T) {
	mem := make([]byte, 3*Size)
	big, small := mem[Size/2:Size/2+Size], mem[:Min-1]
	other := make([][]byte, tableLen)
	for i := range other {
		other[i] = mem[Size+i*8 : Size+i*8+Min] // each its own start
	}
	tests := []struct {
		name string
		uses [][]byte // in turn
		want []asked
	}{
		{"once", [][]byte{big}, nil},
		{"twice", [][]byte{big, big}, []asked{regionsOf(big)}},
		{"thrice", [][]byte{big, big, big}, []asked{regionsOf(big)}},
		{"below Min", [][]byte{small, small, small}, nil},
		{"same start, another length", [][]byte{big, big[:Min]}, nil},
		{"forgotten after tableLen others", append(append([][]byte{big}, other...), big), nil},
		{"remembered behind tableLen-1 others", append(append([][]byte{big}, other[1:]...), big), []asked{regionsOf(big)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, got := fake(nil)
			for _, b := range tt.uses {
				if _, err := c.Use(b); err != nil {
					t.Fatal(err)
				}
			}
			if len(*got) != len(tt.want) {
				t.Fatalf("collapsed %v, want %v", *got, tt.want)
			}
			for i := range tt.want {
				if (*got)[i] != tt.want[i] {
					t.Fatalf("collapsed %v, want %v", *got, tt.want)
				}
			}
		})
	}
}

func TestUseReportsAndDoesNotRetryARefusal(t *testing.T) {
	refused := errors.New("refused")
	c, got := fake(refused)
	b := make([]byte, Min)
	for i, want := range []struct {
		asked bool
		err   error
	}{{false, nil}, {true, refused}, {false, nil}} {
		asked, err := c.Use(b)
		if asked != want.asked || err != want.err {
			t.Fatalf("use %d: asked %v, %v; want %v, %v", i+1, asked, err, want.asked, want.err)
		}
	}
	if len(*got) != 1 {
		t.Fatalf("asked the kernel %d times, want once", len(*got))
	}
}

func TestUseIsSafeForConcurrentUse(t *testing.T) {
	var mu sync.Mutex
	n := 0
	c := &Collapser{Collapse: func(addr, size uintptr) error {
		mu.Lock()
		n++
		mu.Unlock()
		return nil
	}}
	b := make([]byte, Min)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Use(b)
			}
		})
	}
	wg.Wait()
	if n != 1 {
		t.Fatalf("collapsed %d times, want once", n)
	}
}
