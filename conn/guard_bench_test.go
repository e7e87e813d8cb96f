package conn

import (
	"testing"
	"time"
)

// BenchmarkGuardOp is the client's work of building one guarded write's
// command (GuardOp of an HSET and an INCRBY, its EVALSHA): the part of
// Lock.Guard that grows with the writes.
func BenchmarkGuardOp(b *testing.B) {
	writes := [][]string{{"HSET", "{job:42}:state", "step", "12345"}, {"INCRBY", "{job:42}:count", "1"}}
	b.ReportAllocs()
	for b.Loop() {
		op := GuardOp(Guard{LeaseKey: "{job:42}:lock", Token: "0123456789abcdef0123456789abcdef",
			WriteID: "fedcba9876543210fedcba9876543210", RecordTTL: 10 * time.Second, Writes: writes})
		if err := op.Invalid(); err != nil {
			b.Fatal(err)
		}
		call, _ := op.ScriptCall()
		if cmd := call.Command(); len(cmd.Args) != 22 {
			b.Fatalf("%d arguments", len(cmd.Args))
		}
	}
}
