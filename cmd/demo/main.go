// Command demo plays respire-go's main job on simulated Redis and Valkey
// servers started in process (package sim), so nothing needs installing:
// locks acquired, renewed, contended, lost, released and fenced, and a
// holder paused past its lease whose late write a fencing token refuses,
// and whose guarded write the server refuses while its naive one lands,
// followed by the wire commands each server version received and the
// metrics each run recorded. `make demo` runs it.
//
// The servers' expiry clocks are manual: the demo moves them forward to make
// a lease expire, so the story and the commands it prints are the same on
// every run (the keep-alive scenes wait a few hundred milliseconds of real
// time for the background renewals they show).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// budget bounds the whole demo: a stuck scene fails it instead of hanging.
const budget = 30 * time.Second

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	err := run(ctx, os.Stdout)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// printer writes the story; the first write error is kept and later writes
// are skipped.
type printer struct {
	w   io.Writer
	err error
}

// line prints one formatted line.
func (p *printer) line(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}
