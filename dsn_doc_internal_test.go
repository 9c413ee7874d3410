package rwshard

import (
	"os"
	"strings"
	"testing"
)

// Every DSN parameter is documented in the package documentation and in
// the README's table.
func TestDSNParametersDocumented(t *testing.T) {
	for _, file := range []string{"doc.go", "README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, name := range knownParams() {
			key := paramPrefix + name
			if file == "doc.go" && !strings.Contains(text, "//\t"+key+" ") {
				t.Errorf("%s: %s missing from the parameter list", file, key)
			}
			if file == "README.md" && !strings.Contains(text, "| `"+key+"` |") {
				t.Errorf("%s: %s missing from the parameter table", file, key)
			}
		}
	}
}
