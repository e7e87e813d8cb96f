package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// runWire plays the lock's life on every simulated profile (each on its own server,
// concurrently) and prints it to w, oldest profile first, ending with a
// table of the commands each server version used. It blocks until done and
// closes every server, client and lock it opened.
func runWire(ctx context.Context, w io.Writer) error {
	p := &printer{w: w}
	p.line("respire-go demo: lease locks on simulated servers (package sim, in process).")
	p.line("Two workers, each with its own client, share the lock %q.", lockKey)
	p.line("Each server's expiry clock is manual: the demo moves it to make leases expire.")
	p.line("Under each scene (│): the commands the server received during it, connection")
	p.line("set-up omitted, tokens redacted; \"worker-a session\" is the connection the lease")
	p.line("library pins for every lock command, \"worker-a\" its others (fences, watched reads).")
	p.line("After each server's scenes: the OpenTelemetry metrics the workers recorded.")
	reports := make([]report, len(sim.Profiles))
	stories := make([]bytes.Buffer, len(sim.Profiles))
	errs := make([]error, len(sim.Profiles))
	var wg sync.WaitGroup
	for i, profile := range sim.Profiles { // each on its own server, told in order below
		wg.Go(func() {
			story := &printer{w: &stories[i]}
			reports[i], errs[i] = playProfile(ctx, story, profile)
			errs[i] = errors.Join(errs[i], story.err)
		})
	}
	wg.Wait()
	for i, profile := range sim.Profiles {
		if errs[i] != nil {
			return fmt.Errorf("%s: %w", profile, errs[i])
		}
		if p.err == nil {
			_, p.err = stories[i].WriteTo(w)
		}
	}
	printTable(p, reports)
	return p.err
}

// playProfile runs the scenes on one server of profile; each scene is
// followed by the lock commands the server received during it, and the
// scenes by the metrics they produced.
func playProfile(ctx context.Context, p *printer, profile sim.Profile) (report, error) {
	p.line("")
	p.line("━━ %s (sim profile %s) ━━", profileTitles[profile], profile)
	s, err := openStage(ctx, p, profile)
	if err != nil {
		return report{}, err
	}
	defer s.close()
	if err := s.play(ctx); err != nil {
		return report{}, err
	}
	printMetrics(p, s.store)
	return s.report, nil
}

// play runs the scenes in order; each leaves the key free or held as the
// next expects.
func (s *stage) play(ctx context.Context) error {
	var held, taken *lease.Lock
	scenes := []func() error{
		func() (err error) { held, err = s.acquired(ctx); return err },
		func() error { return s.renewed(ctx, held) },
		func() (err error) { taken, err = s.contended(ctx, held); return err },
		func() error { return s.lost(ctx, taken) },
		func() error { return s.released(ctx) },
		func() error { return s.fenced(ctx) },
		func() error { return s.paused(ctx) },
	}
	for _, scene := range scenes {
		mark := s.mark()
		if err := scene(); err != nil {
			for _, lock := range []*lease.Lock{held, taken} {
				if lock != nil {
					lock.Close()
				}
			}
			return err
		}
		log := s.srv.Log()
		printWire(s.p, s.since(mark), connNames(log))
	}
	return nil
}

// printTable prints, per profile, the commands of the first and of later
// extensions and releases.
func printTable(p *printer, reports []report) {
	const row = "  %-11s %-28s %-10s %-34s %s"
	p.line("")
	p.line("Commands per server version (first use on a connection, then later uses on it):")
	p.line(row, "server", "extension, first", "later", "release, first", "later")
	for _, r := range reports {
		p.line(row, profileTitles[r.profile], r.extendFirst, r.extendLater, r.releaseFirst, r.releaseLater)
	}
}
