package tcp

import (
	"net"
	"testing"
)

func TestOverLoopback(t *testing.T) {
	addr := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 1} }
	tests := []struct {
		name          string
		local, remote net.Addr
		want          bool
	}{
		{"loopback", addr("127.0.0.1"), addr("127.0.0.1"), true},
		{"another loopback address", addr("127.0.0.1"), addr("127.0.0.2"), true},
		{"ipv6 loopback", addr("::1"), addr("::1"), true},
		{"the host's own address", addr("10.1.2.3"), addr("10.1.2.3"), true},
		{"another host", addr("10.1.2.3"), addr("10.1.2.4"), false},
		{"another host over ipv6", addr("fd00::1"), addr("fd00::2"), false},
		{"not tcp", &net.UnixAddr{Name: "a"}, &net.UnixAddr{Name: "a"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := overLoopback(tc.local, tc.remote); got != tc.want {
				t.Errorf("overLoopback(%v, %v) = %v, want %v", tc.local, tc.remote, got, tc.want)
			}
		})
	}
}
