package actor

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

const simPassword = "pw"

// testDriver returns a driver (push on) over the wire engine on the root
// module's own client (internal/wire) on a fresh sim node of profile, shut
// down when the test ends.
func testDriver(t testing.TB, profile sim.Profile, configure ...func(*Config)) (*sim.Server, *Driver) {
	t.Helper()
	return testDriverOn(t, sim.Config{Profile: profile}, configure...)
}

// testDriverOn is testDriver on a sim node of cfg (its password is set here).
func testDriverOn(t testing.TB, cfg sim.Config, configure ...func(*Config)) (*sim.Server, *Driver) {
	t.Helper()
	cfg.Password = simPassword
	srv := simtest.Start(t, cfg)
	client := wire.New(wire.Options{Addrs: []string{srv.Addr()}, Password: simPassword})
	t.Cleanup(client.Close)
	dcfg := Config{Transport: conn.NewEngine(conn.EngineConfig{Client: client}), NewToken: testToken,
		Drift: sm.DefaultDrift(), Push: true}
	for _, f := range configure {
		f(&dcfg)
	}
	d := New(dcfg)
	t.Cleanup(func() { <-d.Shutdown() })
	return srv, d
}

// testToken is a random owner token, as package lease makes them.
func testToken() string {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

func strconvItoa(i int) string { return strconv.Itoa(i) }
