package dst

import (
	"flag"
	"testing"
)

var dseed = flag.Uint64("dseed", 1, "")

func TestDebugSeed(t *testing.T) {
	opt := Swarm(*dseed)
	opt.Transcript = true
	r := Run(opt, nil)
	t.Log(r.Report())
	t.Logf("%+v", opt)
}
