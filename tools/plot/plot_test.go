package plot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/bench"
)

// synthetic returns a sweep of two collectives over two transports,
// with a barrier, which has no size to plot.
func synthetic() []bench.Result {
	var results []bench.Result
	for _, collective := range []string{"allreduce", "bcast"} {
		for _, transport := range []string{"tcp", "shm"} {
			for size := int64(8); size <= 64<<20; size *= 4 {
				r := bench.Result{Impl: "gocoll", Transport: transport, NP: 4, Collective: collective,
					Bytes: size, Algo: "ring", Codec: "none"}
				r.SetTime(2 + float64(size)/1e3)
				results = append(results, r)
			}
		}
	}
	return append(results, bench.Result{Impl: "gocoll", Transport: "tcp", NP: 4, Collective: "barrier", AvgUS: 3})
}

func TestSave(t *testing.T) {
	anchors, err := os.Open(filepath.Join("testdata", "anchors.csv"))
	require.NoError(t, err)
	defer anchors.Close()
	anchorResults, err := bench.ReadCSV(anchors)
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		file    string
		results []bench.Result
		title   string
		magic   []string // any of these starts the file
	}{
		{"png", "out.png", synthetic(), "synthetic", []string{"\x89PNG\r\n\x1a\n"}},
		{"svg", "out.svg", synthetic(), "", []string{"<?xml", "<svg"}},
		{"upper-case extension", "OUT.PNG", synthetic(), "", []string{"\x89PNG\r\n\x1a\n"}},
		{"anchors", "anchors.png", anchorResults, "Open MPI and mpi4py", []string{"\x89PNG\r\n\x1a\n"}},
		{"one point", "one.svg", synthetic()[:1], "", []string{"<?xml", "<svg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			require.NoError(t, Save(path, tc.results, Options{Title: tc.title}))
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Greater(t, len(data), 1000)
			require.True(t, hasAnyPrefix(string(data), tc.magic), "starts %q", data[:16])
		})
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func TestSVGText(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, "svg", synthetic(), Options{Title: "the title"}))
	svg := buf.String()
	for _, want := range []string{"the title", "allreduce: bus bandwidth", "bcast: latency",
		"gocoll ring none tcp np=4", "gocoll ring none shm np=4", "1 KiB", "1 MiB", "busbw (GB/s)"} {
		require.Contains(t, svg, want)
	}
	require.NotContains(t, svg, "barrier")
}

func TestWriteErrors(t *testing.T) {
	barrier := []bench.Result{{Impl: "gocoll", Transport: "tcp", NP: 2, Collective: "barrier", AvgUS: 3}}
	for _, tc := range []struct {
		name    string
		format  string
		results []bench.Result
		wantErr string
	}{
		{"unknown format", "jpg", synthetic(), `unsupported image format "jpg": want one of png, svg`},
		{"no format", "", synthetic(), `unsupported image format ""`},
		{"no results", "png", nil, "no results to plot"},
		{"nothing plottable", "svg", barrier, "none of the 1 results has a positive size and time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tc.format, tc.results, Options{})
			require.ErrorContains(t, err, tc.wantErr)
			require.Zero(t, buf.Len())
		})
	}
}

func TestSaveUnknownExtension(t *testing.T) {
	for _, name := range []string{"out.jpg", "out", "out.png.txt"} {
		path := filepath.Join(t.TempDir(), name)
		err := Save(path, synthetic(), Options{})
		require.ErrorContains(t, err, "unsupported image format")
		require.ErrorContains(t, err, path)
		require.NoFileExists(t, path, "no file for a format it cannot write")
	}
}
