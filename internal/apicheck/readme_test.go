package apicheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readme is the repository's README, read from this package's directory.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	return string(b)
}

// TestREADMEOpening: the README opens with the two commands that work on
// a fresh machine.
func TestREADMEOpening(t *testing.T) {
	_, first, ok := strings.Cut(readme(t), "```sh\n")
	require.True(t, ok, "the README has no block of commands")
	first, _, ok = strings.Cut(first, "```")
	require.True(t, ok, "the first block of commands does not end")
	lines := strings.Split(strings.TrimSpace(first), "\n")
	require.Len(t, lines, 2, "the first block of commands")
	require.True(t, strings.HasPrefix(lines[0], "make demo"), lines[0])
	require.True(t, strings.HasPrefix(lines[1], "make test"), lines[1])
}

// TestREADMEProgram extracts the README's complete program and builds
// it, so that it compiles as written.
func TestREADMEProgram(t *testing.T) {
	s := readme(t)
	const heading = "## A complete program"
	i := strings.Index(s, heading)
	require.GreaterOrEqual(t, i, 0, "the README has no %q section", heading)
	code := s[i:]
	start := strings.Index(code, "```go\n")
	require.GreaterOrEqual(t, start, 0, "no Go block after %q", heading)
	code = code[start+len("```go\n"):]
	code = code[:strings.Index(code, "```")]
	require.True(t, strings.HasPrefix(code, "package main\n"), "the program is a whole file")

	// Inside the module, so that it builds against this checkout; under
	// testdata, so that ./... never sees it.
	dir, err := os.MkdirTemp("testdata", "readme-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644))
	cmd := exec.Command("go", "build", "-o", os.DevNull, "./"+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the README's program:\n%s", out)
}

// TestREADMELinks: every relative link of the README names a file of the
// repository.
func TestREADMELinks(t *testing.T) {
	s := readme(t)
	links := regexp.MustCompile(`\]\(([^)#:]+)\)`).FindAllStringSubmatch(s, -1)
	require.NotEmpty(t, links)
	for _, l := range links {
		_, err := os.Stat(filepath.Join("..", "..", l[1]))
		require.NoError(t, err, "README links to %s", l[1])
	}
}
