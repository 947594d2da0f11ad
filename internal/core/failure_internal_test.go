package core

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFailureFrameRoundTrip: a failure frame carries whom to blame from one
// rank to another intact, so every rank's error names the same culprits.
func TestFailureFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		failure   error
		wantRanks []int // for a loss
		wantAbort int   // for an abort, else -1
	}{
		{"one rank lost", &PeerError{Rank: 3, Ranks: []int{3}, Err: errors.New("EOF")}, []int{3}, -1},
		{"a host's ranks lost", &PeerError{Rank: 3, Ranks: []int{2, 3}, Err: errors.New("EOF")}, []int{2, 3}, -1},
		{"rank aborted", &AbortError{Rank: 1, Reason: "loss is NaN"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFailure(0, 4, failurePayload(tt.failure))
			require.NoError(t, err)
			if tt.wantAbort >= 0 {
				var ae *AbortError
				require.ErrorAs(t, got, &ae)
				require.Equal(t, tt.wantAbort, ae.Rank)
				return
			}
			var pe *PeerError
			require.ErrorAs(t, got, &pe)
			require.Equal(t, tt.wantRanks, pe.Ranks)
			require.Equal(t, tt.failure.(*PeerError).Rank, pe.Rank)
			require.ErrorIs(t, got, ErrPeerLost)
			require.Contains(t, got.Error(), "reported by rank 0")
		})
	}
}

// TestFailureFrameRejectsNonsense: a frame that blames ranks outside the
// job or is cut short is an error, never a failure blaming someone.
func TestFailureFrameRejectsNonsense(t *testing.T) {
	many := failurePayload(&PeerError{Rank: 1, Ranks: []int{1, 2}, Err: errors.New("EOF")})
	tests := []struct {
		name  string
		frame []byte
	}{
		{"short head", []byte{failLost, 0}},
		{"rank outside the job", []byte{failLost, 9, 0, 0, 0}},
		{"unknown kind", []byte{42, 0, 0, 0, 0}},
		{"many cut short", many[:failureHead+4]},
		{"many blames twice", append([]byte{failLostMany, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}, "x"...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFailure(0, 4, tt.frame)
			require.Error(t, err)
		})
	}
}
