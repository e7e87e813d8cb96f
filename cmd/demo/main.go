// Command demo shows in one screen why respire-go's locks are safe, on a
// simulated Redis started in process (package sim), so nothing needs
// installing: a holder paused past its lease, side by side with a naive
// SET NX + DEL lock (two writers there, a refused stale write here); a lost
// lock seen at once; a semaphore capping workers; an election handed over
// on SIGTERM — each with the figure that matters, measured as it runs.
// `make demo` runs it.
//
// With -wire it plays instead the lock's life (acquired, renewed,
// contended, lost, released, fenced, paused) on each simulated server
// version, with the commands each one received and the metrics each run
// recorded: `make demo ARGS=-wire`. Those servers' expiry clocks are
// manual, so the transcripts are the same on every run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// budget bounds the whole demo: a stuck scene fails it instead of hanging.
const budget = 30 * time.Second

func main() {
	wire := flag.Bool("wire", false, "play the lock's life on each simulated server version and print the commands each received")
	flag.Parse()
	play := runStory
	if *wire {
		play = runWire
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	err := play(ctx, os.Stdout)
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
