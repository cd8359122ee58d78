package retail

import (
	"testing"

	"github.com/retailkit/retail/internal/rules"
)

// The limits are written twice, here for the documentation and in
// internal/rules for the checks: they must agree.
func TestRules_LimitsAgreeWithInternalRules(t *testing.T) {
	for _, c := range []struct {
		name       string
		got, inner int
	}{
		{"MaxIDLen", MaxIDLen, rules.MaxIDLen},
		{"MaxUserLen", MaxUserLen, rules.MaxUserLen},
		{"MaxPageKeyLen", MaxPageKeyLen, rules.MaxPageKeyLen},
	} {
		if c.got != c.inner {
			t.Errorf("%s = %d, internal/rules says %d", c.name, c.got, c.inner)
		}
	}
}
