package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// pairs of client kinds: who sets, who gets.
var kindPairs = []struct{ setter, getter string }{
	{"tcp", "tcp"},
	{"local", "tcp"},
	{"tcp", "local"},
	{"local", "local"},
}

func TestSetGetAcrossClients(t *testing.T) {
	for _, kp := range kindPairs {
		t.Run(kp.setter+"->"+kp.getter, func(t *testing.T) {
			f := serve(t, 3)
			setter := f.client(t, kp.setter, 1)
			getter := f.client(t, kp.getter, 2)
			assert.Equal(t, f.srv.JobID(), setter.JobID())
			assert.Equal(t, f.srv.JobID(), getter.JobID())
			assert.NotZero(t, f.srv.JobID())
			ctx, cancel := bg()
			defer cancel()

			tests := []struct {
				name  string
				key   string
				value []byte
			}{
				{"address", "addr/1", []byte("10.0.0.1:4242")},
				{"empty value", "empty", []byte{}},
				{"binary", "bin", []byte{0, 1, 2, 0xff, 0}},
				{"long key", strings.Repeat("k", MaxKey), []byte("v")},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					buf := append([]byte(nil), tc.value...)
					require.NoError(t, setter.Set(ctx, tc.key, buf))
					clear(buf) // Set must not retain it
					got, err := getter.Get(ctx, tc.key)
					require.NoError(t, err)
					require.Equal(t, tc.value, got)
					// Each Get gets its own copy.
					if len(got) > 0 {
						got[0]++
						again, err := getter.Get(ctx, tc.key)
						require.NoError(t, err)
						require.Equal(t, tc.value, again)
					}
				})
			}

			// A second Set replaces the value.
			require.NoError(t, setter.Set(ctx, "addr/1", []byte("new")))
			got, err := getter.Get(ctx, "addr/1")
			require.NoError(t, err)
			require.Equal(t, []byte("new"), got)
		})
	}
}

func TestGetBeforeSetWaits(t *testing.T) {
	for _, kp := range kindPairs {
		t.Run(kp.setter+"->"+kp.getter, func(t *testing.T) {
			f := serve(t, 2)
			setter := f.client(t, kp.setter, 0)
			getter := f.client(t, kp.getter, 1)
			ctx, cancel := bg()
			defer cancel()

			got := make(chan []byte, 1)
			go func() {
				v, err := getter.Get(ctx, "late")
				assert.NoError(t, err)
				got <- v
			}()
			waitFor(t, "the get to wait in the store", func() bool { return f.waiting("late") == 1 })
			select {
			case v := <-got:
				t.Fatalf("Get returned %q before the key was set", v)
			default:
			}
			require.NoError(t, setter.Set(ctx, "late", []byte("value")))
			select {
			case v := <-got:
				require.Equal(t, []byte("value"), v)
			case <-time.After(watchdog):
				t.Fatal("Get not woken by Set")
			}
			require.Zero(t, f.waiting("late"))
		})
	}
}

func TestManyConcurrentGets(t *testing.T) {
	const size, keys, getsPerKey = 4, 32, 3
	f := serve(t, size)
	clients := []*Client{f.join(t, 0)}
	for r := 1; r < size; r++ {
		clients = append(clients, f.dial(t, r))
	}
	ctx, cancel := bg()
	defer cancel()

	// Every client waits for every key several times over before any is
	// set; each rank then sets a quarter of the keys.
	var wg sync.WaitGroup
	errs := make(chan error, size*keys*getsPerKey)
	for _, c := range clients {
		for k := range keys {
			for range getsPerKey {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("k/%d", k)
					v, err := c.Get(ctx, key)
					if err == nil && string(v) != "v"+key {
						err = fmt.Errorf("rank %d: %s = %q", c.Rank(), key, v)
					}
					if err != nil {
						errs <- err
					}
				}()
			}
		}
	}
	waitFor(t, "every get to wait", func() bool {
		for k := range keys {
			if f.waiting(fmt.Sprintf("k/%d", k)) != size*getsPerKey {
				return false
			}
		}
		return true
	})
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k/%d", k)
			if err := clients[k%size].Set(ctx, key, []byte("v"+key)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGetHonoursContext(t *testing.T) {
	for _, kind := range []string{"tcp", "local"} {
		for _, how := range []string{"cancel", "deadline", "done before"} {
			t.Run(kind+"/"+how, func(t *testing.T) {
				f := serve(t, 2)
				c := f.client(t, kind, 1)
				other := f.join(t, 0)

				var ctx context.Context
				var cancel func()
				cause := errors.New("the user gave up")
				switch how {
				case "cancel":
					var cc context.CancelCauseFunc
					ctx, cc = context.WithCancelCause(context.Background())
					cancel = func() { cc(cause) }
				case "deadline":
					ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
				case "done before":
					ctx, cancel = context.WithCancel(context.Background())
					cancel()
				}
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := c.Get(ctx, "never")
					done <- err
				}()
				if how == "cancel" {
					waitFor(t, "the get to wait", func() bool { return f.waiting("never") == 1 })
					cancel()
				}
				var err error
				select {
				case err = <-done:
				case <-time.After(watchdog):
					t.Fatal("Get ignored its context")
				}
				switch how {
				case "cancel":
					require.ErrorIs(t, err, context.Canceled)
					require.ErrorIs(t, err, cause)
				case "deadline":
					require.ErrorIs(t, err, context.DeadlineExceeded)
				case "done before":
					require.ErrorIs(t, err, context.Canceled)
				}
				require.Contains(t, err.Error(), `"never"`)
				// The store forgets the abandoned get, and the client
				// goes on working.
				waitFor(t, "the store to drop the get", func() bool { return f.waiting("never") == 0 })
				ctx2, cancel2 := bg()
				defer cancel2()
				require.NoError(t, other.Set(ctx2, "never", []byte("now")))
				v, err := c.Get(ctx2, "never")
				require.NoError(t, err)
				require.Equal(t, []byte("now"), v)
			})
		}
	}
}

func TestLimits(t *testing.T) {
	f := serve(t, 2)
	remote := f.dial(t, 1)
	local := f.join(t, 0)
	ctx, cancel := bg()
	defer cancel()
	for _, c := range []*Client{remote, local} {
		t.Run(fmt.Sprintf("rank %d", c.Rank()), func(t *testing.T) {
			tests := []struct {
				name  string
				call  func() error
				valid bool
			}{
				{"empty key set", func() error { return c.Set(ctx, "", nil) }, false},
				{"empty key get", func() error { _, err := c.Get(ctx, ""); return err }, false},
				{"key too long set", func() error { return c.Set(ctx, strings.Repeat("k", MaxKey+1), nil) }, false},
				{"key too long get", func() error { _, err := c.Get(ctx, strings.Repeat("k", MaxKey+1)); return err }, false},
				{"value too long", func() error { return c.Set(ctx, "big", make([]byte, MaxValue+1)) }, false},
				{"largest value", func() error {
					v := make([]byte, MaxValue)
					v[MaxValue-1] = 7
					if err := c.Set(ctx, "big", v); err != nil {
						return err
					}
					got, err := c.Get(ctx, "big")
					if err == nil && (len(got) != MaxValue || got[MaxValue-1] != 7) {
						err = fmt.Errorf("got %d bytes back", len(got))
					}
					return err
				}, true},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					err := tc.call()
					if tc.valid {
						require.NoError(t, err)
					} else {
						require.ErrorIs(t, err, ErrInvalid)
					}
				})
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	const size = 4
	dialRank := func(rank, size int, secret []byte) func(*testing.T, *fixture) error {
		return func(t *testing.T, f *fixture) error {
			ctx, cancel := bg()
			defer cancel()
			c, err := Dial(ctx, f.addr, rank, size, secret)
			if err == nil {
				c.Close()
			}
			return err
		}
	}
	joinRank := func(rank int) func(*testing.T, *fixture) error {
		return func(t *testing.T, f *fixture) error {
			c, err := f.srv.Join(rank)
			if err == nil {
				c.Close()
			}
			return err
		}
	}
	tests := []struct {
		name    string
		setup   func(*testing.T, *fixture)
		try     func(*testing.T, *fixture) error
		want    error
		message string
		logged  bool // the server logs the refusal
	}{
		{name: "wrong secret", try: dialRank(1, size, []byte("not the secret")),
			want: ErrRefused, message: "wrong secret", logged: true},
		{name: "empty secret", try: dialRank(1, size, nil),
			want: ErrRefused, message: "wrong secret", logged: true},
		{name: "duplicate rank over tcp", setup: func(t *testing.T, f *fixture) { f.dial(t, 2) },
			try: dialRank(2, size, testSecret), want: ErrRefused, message: "rank 2 already joined", logged: true},
		{name: "duplicate rank in process", setup: func(t *testing.T, f *fixture) { f.join(t, 0) },
			try: joinRank(0), want: ErrRefused, message: "rank 0 already joined"},
		{name: "tcp rank taken in process", setup: func(t *testing.T, f *fixture) { f.join(t, 1) },
			try: dialRank(1, size, testSecret), want: ErrRefused, message: "rank 1 already joined", logged: true},
		{name: "rank that left", setup: func(t *testing.T, f *fixture) { require.NoError(t, f.dial(t, 3).Close()) },
			try: dialRank(3, size, testSecret), want: ErrRefused, message: "rank 3 already joined and left", logged: true},
		{name: "rank out of range over tcp", try: dialRank(5, 8, testSecret),
			want: ErrRefused, message: "rank 5 is outside the job of 4 ranks", logged: true},
		{name: "rank out of range in process", try: joinRank(4),
			want: ErrRefused, message: "rank 4 is outside the job of 4 ranks"},
		{name: "negative rank in process", try: joinRank(-1),
			want: ErrRefused, message: "rank -1 is outside the job of 4 ranks"},
		{name: "size mismatch", try: dialRank(3, 8, testSecret),
			want: ErrRefused, message: "rank 3 says the job has 8 ranks, the store has 4", logged: true},
		{name: "size mismatch smaller", try: dialRank(1, 2, testSecret),
			want: ErrRefused, message: "rank 1 says the job has 2 ranks, the store has 4", logged: true},
		{name: "rank outside its own job", try: dialRank(-1, size, testSecret),
			want: ErrInvalid, message: "rank -1 is outside the job of 4 ranks"},
		{name: "no ranks", try: dialRank(0, 0, testSecret),
			want: ErrInvalid, message: "a job of 0 ranks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := serve(t, size)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			err := tc.try(t, f)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.message)
			// A refusal is final: Dial does not retry it.
			require.NotContains(t, err.Error(), "attempt")
			if tc.logged {
				waitFor(t, "the refusal in the log", func() bool { return strings.Contains(f.logs.String(), "refused a client") })
			}

			// The store goes on serving good clients.
			requireServing(t, f)
		})
	}
}

// requireServing checks that the store admits and serves a rank that is
// still free.
func requireServing(t *testing.T, f *fixture) {
	t.Helper()
	f.srv.mu.Lock()
	free := -1
	for r := f.srv.size - 1; r >= 0 && free < 0; r-- {
		if f.srv.members[r].state == absent {
			free = r
		}
	}
	f.srv.mu.Unlock()
	require.GreaterOrEqual(t, free, 0, "no free rank left")
	c := f.dial(t, free)
	ctx, cancel := bg()
	defer cancel()
	key := fmt.Sprintf("alive/%d", free)
	require.NoError(t, c.Set(ctx, key, []byte("yes")))
	v, err := c.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, []byte("yes"), v)
}

func TestGarbageFromRawClients(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"a few bytes", []byte("hello")},
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("x", 100))},
		{"all ones", []byte(strings.Repeat("\xff", 200))},
		{"nothing", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := serve(t, 2)
			conn, err := net.Dial("tcp", f.addr)
			require.NoError(t, err)
			_, err = conn.Write(tc.bytes)
			require.NoError(t, err)
			// Close our side, so the server need not wait for more. It
			// may have hung up on the garbage already, which makes this
			// fail; that is fine.
			_ = conn.(*net.TCPConn).CloseWrite()
			waitFor(t, "the garbage to be logged", func() bool { return strings.Contains(f.logs.String(), "refused a client") })
			conn.Close()
			requireServing(t, f)
		})
	}
}

func TestGarbageFromMember(t *testing.T) {
	frame := func(n uint32, typ byte, body ...byte) []byte {
		return append(appendHeader(nil, frameType(typ), int(n)), body...)
	}
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"unknown type", frame(0, 0x42)},
		{"server frame type", frame(8, byte(tOK), make([]byte, 8)...)},
		{"get claiming 16 MiB", frame(16<<20, byte(tGet))},
		{"set claiming 4 GiB", frame(1<<32-1, byte(tSet))},
		{"set key longer than body", frame(11, byte(tSet), 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x03, 'k')},
		{"set empty key", frame(11, byte(tSet), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'k')},
		{"get empty key", frame(8, byte(tGet), 1, 0, 0, 0, 0, 0, 0, 0)},
		{"second hello", frame(5, byte(tHello), 1, 4, 0, 0, 0)},
		{"cut mid-frame", frame(20, byte(tGet), 1, 2, 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := serve(t, 3)
			watcher := f.join(t, 0)
			bad := f.dial(t, 1)
			_, err := bad.wc.c.Write(tc.bytes)
			require.NoError(t, err)
			if tc.name == "cut mid-frame" {
				kill(bad)
			}
			// The broken rank is dropped and reported to the others.
			ev := nextEvent(t, watcher)
			require.Equal(t, Lost, ev.Kind)
			require.Equal(t, 1, ev.Rank)
			require.Contains(t, ev.Reason, "connection to rank 1 lost")
			ev = nextEvent(t, bad)
			require.Equal(t, Event{Kind: Lost, Rank: 0, Reason: ev.Reason}, ev)
			if tc.name != "cut mid-frame" {
				require.Contains(t, f.logs.String(), "broke the protocol")
				require.Contains(t, f.logs.String(), "protocol violation")
			}
			requireServing(t, f)
		})
	}
}

func TestDialRetriesUntilServerStarts(t *testing.T) {
	addr, listen := reservedAddr(t)
	srv, err := NewServer(2, testSecret, nil)
	require.NoError(t, err)
	ctx, cancel := bg()
	defer cancel()
	dialed := make(chan *Client, 1)
	go func() {
		c, err := Dial(ctx, addr, 1, 2, testSecret)
		assert.NoError(t, err)
		dialed <- c
	}()

	time.Sleep(200 * time.Millisecond) // the client knocks a few times first
	l := listen()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-served)
	}()

	var c *Client
	select {
	case c = <-dialed:
	case <-time.After(watchdog):
		t.Fatal("Dial did not connect after the server started")
	}
	require.NotNil(t, c)
	defer c.Close()
	require.Equal(t, srv.JobID(), c.JobID())
	tcp, ok := c.LocalAddr().(*net.TCPAddr)
	require.True(t, ok)
	require.True(t, tcp.IP.IsLoopback())

	local, err := srv.Join(0)
	require.NoError(t, err)
	defer local.Close()
	require.Nil(t, local.LocalAddr())
	require.NoError(t, c.Set(ctx, "k", []byte("v")))
	v, err := local.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, []byte("v"), v)
}

func TestDialToNothingGivesUp(t *testing.T) {
	addr, _ := reservedAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := Dial(ctx, addr, 1, 2, testSecret)
	require.Nil(t, c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "the last cause is kept")
	require.Contains(t, err.Error(), addr)
	// More than one attempt: Dial retried.
	require.Regexp(t, `after ([2-9]|[1-9][0-9]+) attempts`, err.Error())
}

func TestLostWhenClientDies(t *testing.T) {
	f := serve(t, 4)
	r0 := f.join(t, 0)
	r1 := f.dial(t, 1)
	r2 := f.dial(t, 2)

	kill(r2)
	for _, c := range []*Client{r0, r1} {
		ev := nextEvent(t, c)
		require.Equal(t, Lost, ev.Kind, "rank %d", c.Rank())
		require.Equal(t, 2, ev.Rank)
		require.Contains(t, ev.Reason, "connection to rank 2 lost")
	}
	// The server logs the loss after it has told the ranks.
	waitFor(t, "the server to log the loss", func() bool { return strings.Contains(f.logs.String(), "lost a rank") })

	// The dead rank's own client saw its connection go.
	ev := nextEvent(t, r2)
	require.Equal(t, Lost, ev.Kind)
	require.Equal(t, 0, ev.Rank)
	eventsClosed(t, r2)
	ctx, cancel := bg()
	defer cancel()
	require.ErrorIs(t, r2.Set(ctx, "k", nil), ErrLost)

	// A rank that joins later still learns of the loss.
	r3 := f.dial(t, 3)
	ev = nextEvent(t, r3)
	require.Equal(t, Lost, ev.Kind)
	require.Equal(t, 2, ev.Rank)
	require.Contains(t, ev.Reason, "connection to rank 2 lost")
}

func TestLostStoreFailsPendingCalls(t *testing.T) {
	f := serve(t, 3)
	r0 := f.join(t, 0)
	r1 := f.dial(t, 1)
	ctx, cancel := bg()
	defer cancel()

	pending := make(chan error, 1)
	go func() {
		_, err := r1.Get(ctx, "never")
		pending <- err
	}()
	waitFor(t, "the get to wait", func() bool { return f.waiting("never") == 1 })
	f.cut(t, 1)

	ev := nextEvent(t, r1)
	require.Equal(t, Lost, ev.Kind)
	require.Equal(t, 0, ev.Rank)
	require.Contains(t, ev.Reason, "rank 0")
	require.Contains(t, ev.Reason, f.addr)
	eventsClosed(t, r1)

	for _, err := range []error{<-pending, r1.Set(ctx, "k", nil)} {
		require.ErrorIs(t, err, ErrLost)
		require.Contains(t, err.Error(), "rank 0")
		require.Contains(t, err.Error(), f.addr)
	}
	_, err := r1.Get(ctx, "k")
	require.ErrorIs(t, err, ErrLost)

	// The store, for its part, lost rank 1.
	ev = nextEvent(t, r0)
	require.Equal(t, Lost, ev.Kind)
	require.Equal(t, 1, ev.Rank)
	require.NoError(t, r1.Close())
}

func TestAbort(t *testing.T) {
	for _, kind := range []string{"tcp", "local"} {
		t.Run(kind, func(t *testing.T) {
			f := serve(t, 4)
			clients := f.members(t, 3)
			aborter := 1
			if kind == "local" {
				aborter = 0
			}
			require.NoError(t, clients[aborter].Abort("loss is NaN"))
			want := Event{Kind: Aborted, Rank: aborter, Reason: "loss is NaN"}
			for r, c := range clients {
				if r != aborter {
					require.Equal(t, want, nextEvent(t, c), "rank %d", r)
				}
			}
			// A second abort tells nobody anything new.
			require.NoError(t, clients[aborter].Abort("again"))
			// The aborting rank's death is no news either: its abort
			// said it all.
			if kind == "tcp" {
				kill(clients[aborter])
			}
			// A late joiner hears of the abort.
			late := f.dial(t, 3)
			require.Equal(t, want, nextEvent(t, late))

			f.closeAndCheckGone(t, append(clients, late), aborter)
			// The aborting rank heard nothing of its own abort.
			ev := nextEvent(t, clients[aborter])
			if kind == "tcp" {
				require.Equal(t, Lost, ev.Kind) // its own connection was cut
			} else {
				require.Equal(t, StoreGone, ev.Kind)
			}
		})
	}
}

// TestReportLost: a rank reports another lost, as its links found it; the
// store tells everyone else once, a late joiner too, and the lost rank's
// own disconnect is no news after that.
func TestReportLost(t *testing.T) {
	for _, kind := range []string{"tcp", "local"} {
		t.Run(kind, func(t *testing.T) {
			f := serve(t, 4)
			clients := f.members(t, 3)
			reporter := 1
			if kind == "local" {
				reporter = 0
			}
			const lost = 2
			ctx, cancel := bg()
			defer cancel()
			require.NoError(t, clients[reporter].ReportLost(ctx, lost, "connection to rank 2 lost: EOF"))
			want := Event{Kind: Lost, Rank: lost, Reason: "connection to rank 2 lost: EOF"}
			for r, c := range clients {
				if r != lost {
					require.Equal(t, want, nextEvent(t, c), "rank %d", r)
				}
			}
			// A second report, and the lost rank's disconnect, are no news.
			require.NoError(t, clients[reporter].ReportLost(ctx, lost, "again"))
			kill(clients[lost])
			late := f.dial(t, 3)
			require.Equal(t, want, nextEvent(t, late))

			f.closeAndCheckGone(t, append(clients, late), lost)
		})
	}
}

func TestReportLostRejects(t *testing.T) {
	f := serve(t, 2)
	c := f.dial(t, 1)
	ctx, cancel := bg()
	defer cancel()
	for _, rank := range []int{-1, 1, 2} {
		require.ErrorIs(t, c.ReportLost(ctx, rank, "lost"), ErrInvalid, "rank %d", rank)
	}
}

func TestAbortLongReasonIsCut(t *testing.T) {
	f := serve(t, 2)
	a := f.dial(t, 1)
	b := f.join(t, 0)
	require.NoError(t, a.Abort(strings.Repeat("é", MaxReason)))
	ev := nextEvent(t, b)
	require.Equal(t, Aborted, ev.Kind)
	require.LessOrEqual(t, len(ev.Reason), MaxReason)
	require.Equal(t, strings.Repeat("é", MaxReason/2), ev.Reason)
}

func TestStoreGone(t *testing.T) {
	f := serve(t, 3)
	clients := []*Client{f.join(t, 0), f.dial(t, 1), f.dial(t, 2)}
	ctx, cancel := bg()
	defer cancel()
	pending := make(chan error, len(clients))
	for _, c := range clients {
		go func() {
			_, err := c.Get(ctx, "never")
			pending <- err
		}()
	}
	waitFor(t, "every get to wait", func() bool { return f.waiting("never") == len(clients) })

	require.NoError(t, f.srv.Close())
	for range clients {
		err := <-pending
		require.ErrorIs(t, err, ErrStoreGone)
		require.NotErrorIs(t, err, ErrLost)
	}
	for _, c := range clients {
		ev := nextEvent(t, c)
		require.Equal(t, StoreGone, ev.Kind, "rank %d: %v", c.Rank(), ev)
		require.Equal(t, 0, ev.Rank)
		eventsClosed(t, c)
		require.ErrorIs(t, c.Set(ctx, "k", nil), ErrStoreGone)
		require.Error(t, c.Abort("late"))
		require.NoError(t, c.Close())
	}
	_, err := f.srv.Join(0)
	require.ErrorIs(t, err, ErrClosed)
}

func TestCleanCloseIsNotALoss(t *testing.T) {
	for _, kind := range []string{"tcp", "local"} {
		t.Run(kind, func(t *testing.T) {
			f := serve(t, 3)
			watcher := f.dial(t, 2)
			leaver := f.client(t, kind, 0)
			if kind == "tcp" {
				leaver = f.client(t, kind, 1)
			}
			ctx, cancel := bg()
			defer cancel()
			pending := make(chan error, 1)
			go func() {
				_, err := leaver.Get(ctx, "never")
				pending <- err
			}()
			waitFor(t, "the get to wait", func() bool { return f.waiting("never") == 1 })
			require.NoError(t, leaver.Close())
			require.ErrorIs(t, <-pending, ErrClosed)
			eventsClosed(t, leaver)
			require.ErrorIs(t, leaver.Set(ctx, "k", nil), ErrClosed)
			require.NoError(t, leaver.Close(), "Close is idempotent")
			waitFor(t, "the store to drop the get", func() bool { return f.waiting("never") == 0 })

			// The first thing the watcher hears is the store closing.
			require.NoError(t, f.srv.Close())
			require.Equal(t, StoreGone, nextEvent(t, watcher).Kind)
			require.NotContains(t, f.logs.String(), "lost a rank")
		})
	}
}

func TestWaitLeft(t *testing.T) {
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 20*time.Millisecond)
	}
	t.Run("leave and loss", func(t *testing.T) {
		f := serve(t, 4)
		f.join(t, 0)
		r1, r2, r3 := f.dial(t, 1), f.dial(t, 2), f.dial(t, 3)

		ctx, cancel := short()
		err := f.srv.WaitLeft(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "ranks 1,2,3 still connected")

		require.NoError(t, r1.Close())
		kill(r2)
		waitFor(t, "rank 2 to be lost", func() bool {
			f.srv.mu.Lock()
			defer f.srv.mu.Unlock()
			return f.srv.members[2].state == gone
		})
		ctx, cancel = short()
		err = f.srv.WaitLeft(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "rank 3 still connected")

		done := make(chan error, 1)
		go func() {
			ctx, cancel := bg()
			defer cancel()
			done <- f.srv.WaitLeft(ctx)
		}()
		require.NoError(t, r3.Close())
		require.NoError(t, <-done)
	})
	t.Run("never joined", func(t *testing.T) {
		f := serve(t, 3)
		f.dial(t, 1)
		ctx, cancel := short()
		defer cancel()
		err := f.srv.WaitLeft(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "rank 1 still connected, rank 2 never joined")
	})
	t.Run("server closed", func(t *testing.T) {
		f := serve(t, 2)
		f.dial(t, 1)
		done := make(chan error, 1)
		go func() {
			ctx, cancel := bg()
			defer cancel()
			done <- f.srv.WaitLeft(ctx)
		}()
		require.NoError(t, f.srv.Close())
		require.ErrorIs(t, <-done, ErrClosed)
	})
	t.Run("one rank", func(t *testing.T) {
		f := serve(t, 1)
		f.join(t, 0)
		require.NoError(t, f.srv.WaitLeft(context.Background()))
	})
}

func TestNewServerValidates(t *testing.T) {
	for _, size := range []int{0, -1, MaxSize + 1} {
		_, err := NewServer(size, testSecret, nil)
		require.ErrorIs(t, err, ErrInvalid, "size %d", size)
	}
	a, err := NewServer(1, nil, nil)
	require.NoError(t, err)
	b, err := NewServer(1, nil, nil)
	require.NoError(t, err)
	require.NotZero(t, a.JobID())
	require.NotEqual(t, a.JobID(), b.JobID())
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	// Serving a closed server returns at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, a.Serve(l))
}

func TestNoGoroutineLeaks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	func() {
		f := serve(t, 5)
		r0 := f.join(t, 0)
		r1, r2, r3 := f.dial(t, 1), f.dial(t, 2), f.dial(t, 3)
		ctx, cancel := bg()
		defer cancel()
		// Calls in every state: answered, waiting, abandoned.
		require.NoError(t, r1.Set(ctx, "a", []byte("1")))
		_, err := r2.Get(ctx, "a")
		require.NoError(t, err)
		for _, c := range []*Client{r0, r1, r2, r3} {
			go c.Get(ctx, "never")
		}
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Millisecond)
		_, err = r3.Get(cctx, "never either")
		ccancel()
		require.Error(t, err)
		kill(r3)
		require.Equal(t, Lost, nextEvent(t, r1).Kind)
		require.NoError(t, r2.Abort("stop"))
		// A raw connection stuck in its handshake.
		raw, err := net.Dial("tcp", f.addr)
		require.NoError(t, err)
		defer raw.Close()
		waitFor(t, "the stuck handshake", func() bool {
			f.srv.mu.Lock()
			defer f.srv.mu.Unlock()
			n := 0
			for _, member := range f.srv.conns {
				if !member {
					n++
				}
			}
			return n == 1
		})
		require.NoError(t, r1.Close())
		require.NoError(t, f.srv.Close())
		for _, c := range []*Client{r0, r1, r2, r3} {
			require.NoError(t, c.Close())
		}
		// A client dialing a closed server gives up at its deadline.
		dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = Dial(dctx, f.addr, 4, 5, testSecret)
		dcancel()
		require.Error(t, err)
	}()
	goleak.VerifyNone(t, before)
}
