package sim

import "testing"

// BenchmarkEngineEvalCompareAndDelete measures one in-process EVALSHA.
func BenchmarkEngineEvalCompareAndDelete(b *testing.B) {
	e := NewEngine(Config{})
	id := e.NewClient("bench")
	e.AdminExec("SCRIPT", "LOAD", cadScript)
	for b.Loop() {
		e.Exec(id, []byte("SET"), []byte("k"), []byte("v"))
		e.Exec(id, []byte("EVALSHA"), []byte(cadSHA), []byte("1"), []byte("k"), []byte("v"))
	}
}
