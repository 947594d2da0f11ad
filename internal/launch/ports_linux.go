package launch

import (
	"os"
	"strconv"
	"strings"
)

// ephemeralFrom is the first port of the range the kernel hands to
// outgoing connections and to listeners on port 0
// (net.ipv4.ip_local_port_range), and whether it could be read.
func ephemeralFrom() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	lo, err := strconv.Atoi(fields[0])
	return lo, err == nil
}
