package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/sim"
)

// A node on a virtual clock: keys expire only when the test moves time.
func ExampleStart() {
	clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Valkey90, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	fmt.Printf("%q\n", srv.Exec("SET", "lock", "owner-1", "NX", "PX", "1000"))
	clock.Advance(400 * time.Millisecond)
	fmt.Printf("%q\n", srv.Exec("PTTL", "lock"))
	fmt.Printf("%q\n", srv.Exec("DELIFEQ", "lock", "owner-1"))
	// Output:
	// "+OK\r\n"
	// ":600\r\n"
	// ":1\r\n"
}

// The same node without sockets, as a deterministic simulation drives it.
func ExampleNewEngine() {
	e := sim.NewEngine(sim.Config{Profile: sim.Redis70})
	id := e.NewClient("10.0.0.1:5000")
	fmt.Printf("%q\n", e.Exec(id, []byte("DELEX"), []byte("lock"), []byte("IFEQ"), []byte("t")))
	fmt.Printf("%q\n", e.Exec(id, []byte("HELLO"), []byte("3"))[:3])
	fmt.Printf("%q\n", e.Exec(id, []byte("GET"), []byte("lock")))
	// Output:
	// "-ERR unknown command 'DELEX', with args beginning with: 'lock' 'IFEQ' 't' \r\n"
	// "%7\r"
	// "_\r\n"
}

// Client-side tracking in process: what the node sends besides replies
// waits in per-client queues until the simulation takes it.
func ExampleEngine_TakePushes() {
	clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
	e := sim.NewEngine(sim.Config{Profile: sim.Valkey90, Clock: clock})
	holder, other := e.NewClient("10.0.0.1:5000"), e.NewClient("10.0.0.2:5000")
	exec := func(id int64, args ...string) string {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return string(e.Exec(id, b...))
	}
	exec(holder, "HELLO", "3")
	fmt.Printf("%q\n", exec(holder, "CLIENT", "TRACKING", "ON"))
	exec(other, "SET", "lock", "owner-1", "PX", "1000")
	fmt.Printf("%q\n", exec(holder, "GET", "lock"))
	clock.Advance(1001 * time.Millisecond)
	e.ExpireDue() // active expiry: nobody reads the key
	fmt.Println(e.PushTargets())
	for _, m := range e.TakePushes(holder) {
		fmt.Printf("%q\n", m)
	}
	// Output:
	// "+OK\r\n"
	// "$7\r\nowner-1\r\n"
	// [1]
	// ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nlock\r\n"
}
