package bench

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// A Report is what a sweep writes as JSON: the results with the machine
// and the command line that produced them.
type Report struct {
	Date    time.Time `json:"date"`
	Command []string  `json:"command"`
	Machine Machine   `json:"machine"`
	Results []Result  `json:"results"`
}

// Machine describes where a sweep ran.
type Machine struct {
	CPU        string `json:"cpu"` // model name, "" where unknown
	Cores      int    `json:"cores"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Hostname   string `json:"hostname"`
}

// ThisMachine describes the machine this process runs on.
func ThisMachine() Machine {
	host, _ := os.Hostname()
	return Machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Hostname:   host,
	}
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// WriteJSON writes rep, indented.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
