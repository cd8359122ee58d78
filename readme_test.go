package retail_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestREADME_QuotesServerExample keeps README.md's "Use it in your code"
// snippet compiling: it must be Example_server's body, which the compiler
// checks, as it stands in example_server_test.go.
func TestREADME_QuotesServerExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_server_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\t// README begins\n")
	body, _, ok2 := strings.Cut(body, "\t// README ends\n")
	if !ok || !ok2 {
		t.Fatal("example_server_test.go: no README begins/ends markers")
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		want = append(want, strings.TrimPrefix(line, "\t"))
	}
	_, section, ok := strings.Cut(string(readme), "## Use it in your code")
	_, quoted, ok2 := strings.Cut(section, "```go\n")
	quoted, _, ok3 := strings.Cut(quoted, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md: no ```go block under \"## Use it in your code\"")
	}
	got := strings.Split(strings.TrimSuffix(quoted, "\n"), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README.md's snippet differs from Example_server in example_server_test.go (-example +README):\n%s", diff)
	}
}

// TestREADME_QuotesOwnRedisTest keeps README.md's test on your own Redis
// compiling: it must be onMyRedis in
// backend/rueidisbackend/rueidistest/example_test.go, which the compiler
// checks, named TestConformanceOnMyRedis.
func TestREADME_QuotesOwnRedisTest(t *testing.T) {
	const name = "func TestConformanceOnMyRedis(t *testing.T) {\n"
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("backend/rueidisbackend/rueidistest/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, want, ok := strings.Cut(string(src), "\nfunc onMyRedis(t *testing.T) {\n")
	want, _, ok2 := strings.Cut(want, "\n}\n")
	if !ok || !ok2 {
		t.Fatal("backend/rueidisbackend/rueidistest/example_test.go: no func onMyRedis")
	}
	_, got, ok := strings.Cut(string(readme), "```go\n"+name)
	got, _, ok2 = strings.Cut(got, "\n}\n```")
	if !ok || !ok2 {
		t.Fatalf("README.md: no ```go block that is %q ... }", name)
	}
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("README.md's TestConformanceOnMyRedis differs from onMyRedis in rueidistest/example_test.go (-example +README):\n%s", diff)
	}
}
