package conn_test

import (
	"fmt"
	. "github.com/respire-go/respire/conn"
	"sync"
	"testing"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/sim"
)

// Many callers share one session per node; racing discoveries are harmless.
func TestConcurrentCallersShareOneSessionPerNode(t *testing.T) {
	srv := startSim(t, sim.Valkey81)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	const callers = 40
	sessions := make([]*Pinned, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		key := fmt.Sprintf("k%d", i)
		mustSet(t, srv, key, "tok")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := ctxT(t)
			if res, err := p.Extend(ctx, key, "tok", 60000); err != nil || !res.Owned {
				errs[i] = fmt.Errorf("Extend(%s) = %+v, %v", key, res, err)
				return
			}
			res, err := p.Release(ctx, key, "tok")
			if err != nil || !res.Owned {
				errs[i] = fmt.Errorf("Release(%s) = %+v, %v", key, res, err)
				return
			}
			sessions[i] = Pin(res.Session)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		if sessions[i] != sessions[0] {
			t.Fatalf("caller %d used another session", i)
		}
	}
	want := capstore.DelexUnsupported | capstore.DelifeqUnsupported | capstore.ReleaseScriptLoaded
	if got := sessions[0].Capabilities(); got != want {
		t.Fatalf("capabilities = %v; want %v", got, want)
	}
}
