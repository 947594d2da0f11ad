package apicheck

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExported(t *testing.T) {
	got, err := Exported("testdata/sample")
	require.NoError(t, err)
	require.Equal(t, []string{
		"const Answer",
		"field Alias.Embedded",
		"field Alias.Name",
		"field Alias.Reader",
		"field T.Embedded",
		"field T.Name",
		"field T.Reader",
		"func New",
		"method Alias.Method",
		"method Alias.Read",
		"method Doer.Close",
		"method Doer.Do",
		"method List.Len",
		"method T.Method",
		"method T.Read",
		"type Alias",
		"type Doer",
		"type Embedded",
		"type List",
		"type T",
		"var Default",
	}, got)
}

var update = flag.Bool("update", false, "rewrite the api/*.txt lists from the packages")

// TestPublicSurface holds every public package to its list in api/: an
// exported identifier that is not listed, or a listed one that is gone,
// fails the test, so the surface users build on changes only on purpose.
// After a deliberate change, run
//
//	go test ./internal/apicheck -run TestPublicSurface -update
//
// and commit the list with the change.
func TestPublicSurface(t *testing.T) {
	for _, pkg := range []string{"comm", "collective", "codec"} {
		t.Run(pkg, func(t *testing.T) {
			got, err := Exported(filepath.Join("..", "..", pkg))
			require.NoError(t, err)
			list := filepath.Join("..", "..", "api", pkg+".txt")
			if *update {
				require.NoError(t, os.WriteFile(list, []byte(strings.Join(got, "\n")+"\n"), 0o644))
				return
			}
			b, err := os.ReadFile(list)
			require.NoError(t, err, "no list of %s's exported identifiers; create it with -update", pkg)
			want := strings.Split(strings.TrimSpace(string(b)), "\n")
			var added, gone []string
			for _, id := range got {
				if !slices.Contains(want, id) {
					added = append(added, id)
				}
			}
			for _, id := range want {
				if !slices.Contains(got, id) {
					gone = append(gone, id)
				}
			}
			if len(added)+len(gone) > 0 {
				t.Errorf("package %s's exported identifiers differ from %s:\nnot listed: %q\nlisted but gone: %q\n"+
					"if the change is deliberate, run go test ./internal/apicheck -run TestPublicSurface -update", pkg, list, added, gone)
			}
		})
	}
}
