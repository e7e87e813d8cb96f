package actor

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

const simPassword = "pw"

// testDriver returns a driver (push on) over rueidis on a fresh sim node of
// profile, shut down when the test ends.
func testDriver(t testing.TB, profile sim.Profile, configure ...func(*Config)) (*sim.Server, *Driver) {
	t.Helper()
	return testDriverOn(t, sim.Config{Profile: profile}, configure...)
}

// testDriverOn is testDriver on a sim node of cfg (its password is set here).
func testDriverOn(t testing.TB, cfg sim.Config, configure ...func(*Config)) (*sim.Server, *Driver) {
	t.Helper()
	cfg.Password = simPassword
	srv := simtest.Start(t, cfg)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: simPassword,
		DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	dcfg := Config{Transport: conn.NewPool(client), NewToken: testToken, Drift: sm.DefaultDrift(), Push: true}
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
