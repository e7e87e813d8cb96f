package actor

import (
	"testing"

	"github.com/respire-go/respire/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
