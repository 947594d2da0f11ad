package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJobFromEnv(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		rank      int
		size      int
		addr      string
		singleton bool
		wantErr   string
	}{
		{name: "gocoll", env: map[string]string{"GOCOLL_RANK": "2", "GOCOLL_SIZE": "4", "GOCOLL_ADDR": "10.0.0.1:7000"},
			rank: 2, size: 4, addr: "10.0.0.1:7000"},
		{name: "torchrun", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"},
			rank: 1, size: 2, addr: "node0:29500"},
		{name: "torchrun agent store takes the next port", env: map[string]string{"RANK": "0", "WORLD_SIZE": "2",
			"MASTER_ADDR": "node0", "MASTER_PORT": "29500", "TORCHELASTIC_USE_AGENT_STORE": "True"},
			rank: 0, size: 2, addr: "node0:29501"},
		{name: "GOCOLL_ADDR overrides torchrun", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2",
			"MASTER_ADDR": "node0", "MASTER_PORT": "29500", "GOCOLL_ADDR": "node9:1234"},
			rank: 1, size: 2, addr: "node9:1234"},
		{name: "gocoll wins over torchrun", env: map[string]string{"GOCOLL_RANK": "3", "GOCOLL_SIZE": "8", "GOCOLL_ADDR": "h:1",
			"RANK": "0", "WORLD_SIZE": "2"},
			rank: 3, size: 8, addr: "h:1"},
		{name: "mpirun", env: map[string]string{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6", "GOCOLL_ADDR": "h:9"},
			rank: 5, size: 6, addr: "h:9"},
		{name: "mpirun without address", env: map[string]string{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6"},
			wantErr: "Open MPI mpirun: no rendezvous address: set GOCOLL_ADDR"},
		{name: "slurm with nodelist", env: map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4",
			"SLURM_JOB_NODELIST": "gpu[07-09,12],cpu1", "SLURM_JOB_ID": "12345"},
			rank: 3, size: 4, addr: "gpu07:31020"},
		{name: "slurm steps get ports of their own", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2",
			"SLURM_JOB_NODELIST": "n1", "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "1"},
			rank: 0, size: 2, addr: "n1:30733"},
		{name: "slurm single node", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NODELIST": "login1"},
			rank: 0, size: 1, addr: "login1:29500"},
		{name: "indexed job", env: map[string]string{"JOB_COMPLETION_INDEX": "7", "GOCOLL_SIZE": "8",
			"MASTER_ADDR": "job-0.svc", "MASTER_PORT": "4000"},
			rank: 7, size: 8, addr: "job-0.svc:4000"},
		{name: "indexed job without size", env: map[string]string{"JOB_COMPLETION_INDEX": "7", "GOCOLL_ADDR": "a:1"},
			wantErr: "JOB_COMPLETION_INDEX is set but the job size is not: set GOCOLL_SIZE or WORLD_SIZE"},
		{name: "nothing is a singleton", env: map[string]string{},
			rank: 0, size: 1, singleton: true},
		{name: "MASTER_ADDR alone is a singleton", env: map[string]string{"MASTER_ADDR": "localhost", "MASTER_PORT": "29500"},
			rank: 0, size: 1, singleton: true},
		{name: "GOCOLL_SIZE without a rank", env: map[string]string{"GOCOLL_SIZE": "4"},
			wantErr: "GOCOLL_SIZE is set but none of GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX is: set GOCOLL_RANK"},
		{name: "GOCOLL_ADDR without a rank", env: map[string]string{"GOCOLL_ADDR": "h:1"},
			wantErr: "GOCOLL_ADDR is set but none of"},
		{name: "WORLD_SIZE without RANK", env: map[string]string{"WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
			wantErr: "WORLD_SIZE is set but none of GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX is: set RANK"},
		{name: "OMPI_COMM_WORLD_SIZE without its rank", env: map[string]string{"OMPI_COMM_WORLD_SIZE": "2"},
			wantErr: "set OMPI_COMM_WORLD_RANK, or unset OMPI_COMM_WORLD_SIZE to run as a single rank"},
		{name: "SLURM_NTASKS without SLURM_PROCID", env: map[string]string{"SLURM_NTASKS": "2", "SLURM_JOB_ID": "9"},
			wantErr: "set SLURM_PROCID (start each rank with srun), or unset SLURM_NTASKS"},
		{name: "RANK without WORLD_SIZE", env: map[string]string{"RANK": "0", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
			wantErr: "torchrun: RANK is set but the job size is not: set WORLD_SIZE"},
		{name: "singleton checks the other variables", env: map[string]string{"GOCOLL_TIMEOUT": "soon"},
			wantErr: `GOCOLL_TIMEOUT="soon" is not a duration`},
		{name: "bad GOCOLL_SINGLETON", env: map[string]string{"GOCOLL_SINGLETON": "maybe"},
			wantErr: `GOCOLL_SINGLETON="maybe" is not 0`},
		{name: "rank not a number", env: map[string]string{"GOCOLL_RANK": "two", "GOCOLL_SIZE": "4", "GOCOLL_ADDR": "h:1"},
			wantErr: `GOCOLL_RANK="two" is not a non-negative integer`},
		{name: "rank beyond size", env: map[string]string{"GOCOLL_RANK": "4", "GOCOLL_SIZE": "4", "GOCOLL_ADDR": "h:1"},
			wantErr: "rank GOCOLL_RANK=4 is not below the job size 4"},
		{name: "size zero", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "0", "GOCOLL_ADDR": "h:1"},
			wantErr: "job size GOCOLL_SIZE=0 must be at least 1"},
		{name: "size missing", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_ADDR": "h:1"},
			wantErr: "GOCOLL_RANK is set but the job size is not: set GOCOLL_SIZE"},
		{name: "address without port", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "1", "GOCOLL_ADDR": "host"},
			wantErr: `rendezvous address "host"`},
		{name: "address with bad port", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "1", "GOCOLL_ADDR": "host:http"},
			wantErr: `port "http" is not a port number`},
		{name: "master addr without port", env: map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h"},
			wantErr: "MASTER_ADDR=\"h\" and MASTER_PORT=\"\" must be set together"},
		{name: "job too large", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "99999999", "GOCOLL_ADDR": "h:1"},
			wantErr: "job size 99999999 is more than the 1048576 ranks a job can have"},
		{name: "TLS certificate without key and CA", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "1", "GOCOLL_ADDR": "h:1", "GOCOLL_TLS_CERT": "c.pem"},
			wantErr: "GOCOLL_TLS_CERT, GOCOLL_TLS_KEY and GOCOLL_TLS_CA must be set together"},
		{name: "bad timeout", env: map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "1", "GOCOLL_ADDR": "h:1", "GOCOLL_TIMEOUT": "soon"},
			wantErr: `GOCOLL_TIMEOUT="soon" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := jobFromEnv(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.rank, spec.rank)
			assert.Equal(t, tt.size, spec.size)
			assert.Equal(t, tt.addr, spec.addr)
			assert.Equal(t, tt.singleton, spec.singleton, "singleton")
		})
	}
}

// TestSingletonFromEnv: GOCOLL_SINGLETON takes 0 and 1 and their
// spellings, and is read under a launcher too, where it changes nothing.
func TestSingletonFromEnv(t *testing.T) {
	tests := []struct {
		value   string
		off     bool
		wantErr bool
	}{
		{"0", true, false}, {"false", true, false}, {"off", true, false}, {"No", true, false},
		{"1", false, false}, {"true", false, false}, {"on", false, false}, {"yes", false, false}, {"", false, false},
		{"2", false, true}, {"nope", false, true},
	}
	for _, tt := range tests {
		for _, launched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q/launched=%v", tt.value, launched), func(t *testing.T) {
				env := map[string]string{"GOCOLL_SINGLETON": tt.value}
				if launched {
					env["GOCOLL_RANK"], env["GOCOLL_SIZE"], env["GOCOLL_ADDR"] = "0", "2", "h:1"
				}
				spec, err := jobFromEnv(mapEnv(env))
				if tt.wantErr {
					require.ErrorIs(t, err, ErrInvalid)
					require.ErrorContains(t, err, "GOCOLL_SINGLETON=")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, !launched, spec.singleton)
				assert.True(t, spec.hasSingleton)
				assert.Equal(t, tt.off, spec.singletonOff)
			})
		}
	}
}

func TestFirstHost(t *testing.T) {
	tests := []struct{ list, want, err string }{
		{list: "node1", want: "node1"},
		{list: "node1,node2", want: "node1"},
		{list: "gpu[03-05]", want: "gpu03"},
		{list: "gpu[3,5]", want: "gpu3"},
		{list: "a,gpu[1-2]", want: "a"},
		{list: "gpu[1-2", err: "unclosed"},
		{list: "gpu[]", err: "empty range"},
		{list: "", err: "empty"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.list, ",", "_"), func(t *testing.T) {
			got, err := firstHost(tt.list)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestSettingsFromEnv: the variables that hold durations take Go's
// durations within their bounds, GOCOLL_HUGE_PAGES Go's booleans, and
// each names the variable and value it refuses.
func TestSettingsFromEnv(t *testing.T) {
	heartbeat := func(s jobSpec) (any, bool) { return s.heartbeat, s.hasHeartbeat }
	spin := func(s jobSpec) (any, bool) { return s.spin, s.hasSpin }
	huge := func(s jobSpec) (any, bool) { return s.hugePages, s.hasHugePages }
	tests := []struct {
		variable, value string
		get             func(jobSpec) (any, bool)
		want            any
		wantErr         string
	}{
		{"GOCOLL_HEARTBEAT", "2s", heartbeat, 2 * time.Second, ""},
		{"GOCOLL_HEARTBEAT", "100ms", heartbeat, 100 * time.Millisecond, ""},
		{"GOCOLL_HEARTBEAT", "0", heartbeat, time.Duration(0), ""},
		{"GOCOLL_HEARTBEAT", "off", heartbeat, time.Duration(0), ""},
		{"GOCOLL_HEARTBEAT", "soon", heartbeat, nil, `GOCOLL_HEARTBEAT="soon" is not a duration`},
		{"GOCOLL_HEARTBEAT", "-1s", heartbeat, nil, `GOCOLL_HEARTBEAT="-1s" is not a duration`},
		{"GOCOLL_HEARTBEAT", "10ms", heartbeat, nil, "heartbeat period 10ms (want 0 for none, or 100ms to 1h0m0s)"},
		{"GOCOLL_SPIN", "50us", spin, 50 * time.Microsecond, ""},
		{"GOCOLL_SPIN", "2ms", spin, 2 * time.Millisecond, ""},
		{"GOCOLL_SPIN", "0", spin, time.Duration(0), ""},
		{"GOCOLL_SPIN", "long", spin, nil, `GOCOLL_SPIN="long" is not a duration from 0 to 10ms`},
		{"GOCOLL_SPIN", "-1us", spin, nil, `GOCOLL_SPIN="-1us" is not a duration`},
		{"GOCOLL_SPIN", "1s", spin, nil, `GOCOLL_SPIN="1s" is not a duration`},
		{"GOCOLL_HUGE_PAGES", "1", huge, true, ""},
		{"GOCOLL_HUGE_PAGES", "true", huge, true, ""},
		{"GOCOLL_HUGE_PAGES", " 0 ", huge, false, ""},
		{"GOCOLL_HUGE_PAGES", "false", huge, false, ""},
		{"GOCOLL_HUGE_PAGES", "off", huge, nil, `GOCOLL_HUGE_PAGES="off": want 1 or 0, true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.variable+"="+tt.value, func(t *testing.T) {
			env := map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "1", "GOCOLL_ADDR": "h:1", tt.variable: tt.value}
			spec, err := jobFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			got, set := tt.get(spec)
			require.True(t, set)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestTCPCongestion: GOCOLL_TCP_CONGESTION and WithTCPCongestion reach
// the tcp links' options, and a name the kernel could never take fails
// Init before any link, naming the variable.
func TestTCPCongestion(t *testing.T) {
	var o Options
	o.setDefault()
	require.Empty(t, o.tcpOptions(), "no tcp options by default")
	require.NoError(t, WithTCPCongestion("cubic")(&o))
	require.Equal(t, "cubic", o.tcpCongestion)
	require.Len(t, o.tcpOptions(), 1)
	require.ErrorIs(t, WithTCPCongestion("")(&o), ErrInvalid)

	env := map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "2", "GOCOLL_ADDR": "127.0.0.1:1", "GOCOLL_TCP_CONGESTION": "cubic"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	spec, err := jobFromEnv(lookup)
	require.NoError(t, err)
	require.Equal(t, "cubic", spec.tcpCongestion)

	env["GOCOLL_TCP_CONGESTION"] = "a-name-too-long-for-linux"
	_, err = initFromEnv(context.Background(), lookup, nil)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, `GOCOLL_TCP_CONGESTION: invalid input: tcp: WithCongestionControl("a-name-too-long-for-linux")`)
}

// TestSingleCopySetting: WithSingleCopy takes auto, cma and none, and
// GOCOLL_SINGLE_COPY reaches it; anything else fails Init, naming the
// variable.
func TestSingleCopySetting(t *testing.T) {
	var o Options
	o.setDefault()
	require.Equal(t, SingleCopyAuto, o.singleCopy, "default")
	for _, mode := range []string{SingleCopyAuto, SingleCopyCMA, SingleCopyNone} {
		require.NoError(t, WithSingleCopy(mode)(&o))
		require.Equal(t, mode, o.singleCopy)
	}
	require.ErrorIs(t, WithSingleCopy("xpmem")(&o), ErrInvalid)

	env := map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "2", "GOCOLL_ADDR": "127.0.0.1:1", "GOCOLL_SINGLE_COPY": "none"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	spec, err := jobFromEnv(lookup)
	require.NoError(t, err)
	require.Equal(t, "none", spec.singleCopy)

	env["GOCOLL_SINGLE_COPY"] = "always"
	_, err = initFromEnv(context.Background(), lookup, nil)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, `GOCOLL_SINGLE_COPY: invalid input: single copy "always" (want auto, cma or none)`)
}
