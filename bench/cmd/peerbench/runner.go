package main

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// constructor builds one implementation on its own client.
type constructor func(srv *server, c calls, ttl time.Duration) (*impl, error)

// constructors lists every implementation in report order.
var constructors = []struct {
	name string
	make constructor
}{
	{"raw-rueidis", newRawRueidis},
	{"raw-go-redis", newRawGoredis},
	{"respire-go", newRespire},
	{"respire-go-poll", newRespirePoll},
	{"respire-go-fair", newRespireFair},
	{"respire-go-goredis", newRespireGoredis},
	{"raw-valkey-go", newRawValkeygo},
	{"respire-go-valkeygo", newRespireValkeygo},
	{"redsync", newRedsync},
	{"redislock", newRedislock},
	{"rueidislock", newRueidislock},
}

// runAll runs every selected scenario for every context mode, the
// implementations interleaved and their order rotated each repetition.
func runAll(cfg config, srv *server) (*report, error) {
	rep := newReport(cfg, srv)
	for _, mode := range cfg.modes {
		e := &env{cfg: cfg, srv: srv, calls: calls{request: mode == "request", timeout: cfg.timeout},
			prefix: "peerbench:" + randomHex(4) + ":" + mode + ":", errs: &firstErrors{}}
		rep.errs[mode] = e.errs
		impls, err := buildImpls(cfg, srv, e.calls)
		if err != nil {
			return nil, err
		}
		rep.setImpls(impls)
		err = runMode(e, rep, mode, mode == cfg.modes[0], impls)
		for _, im := range impls {
			im.close()
		}
		if err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// runMode runs the repetitions of one context mode (first: the first mode
// of the run, the only one the waiting scenarios run in).
func runMode(e *env, rep *report, mode string, first bool, impls []*impl) error {
	for _, im := range impls {
		progress("%s: warming up %s", mode, im.name)
		for range 200 {
			onePair(im, e.prefix+im.name+":warm") //nolint:errcheck // warm-up: connections, scripts, sessions
		}
		parallelFor(e, im, 300*time.Millisecond)
	}
	for r := range e.cfg.reps {
		order := rotate(impls, r)
		for _, sc := range rep.scenarios {
			if sc.together != nil {
				if sc.firstModeOnly && !first {
					continue
				}
				if err := runTogether(e, rep, mode, sc, order, r); err != nil {
					return err
				}
				continue
			}
			for _, im := range order {
				if !sc.applies(infoOf(im)) || (sc.firstModeOnly && !first) {
					continue
				}
				progress("%s: rep %d/%d: %s: %s", mode, r+1, e.cfg.reps, sc.id, im.name)
				runtime.GC()
				values, err := sc.run(e, im, r)
				if err != nil {
					return fmt.Errorf("%s, %s, %s: %w", mode, sc.id, im.name, err)
				}
				rep.add(mode, sc.id, im.name, values)
			}
		}
	}
	return nil
}

// runTogether runs a scenario whose implementations take turns within
// one repetition (scenario.together).
func runTogether(e *env, rep *report, mode string, sc *scenario, order []*impl, r int) error {
	var ims []*impl
	for _, im := range order {
		if sc.applies(infoOf(im)) {
			ims = append(ims, im)
		}
	}
	if len(ims) == 0 {
		return nil
	}
	progress("%s: rep %d/%d: %s: %d implementations, taking turns", mode, r+1, e.cfg.reps, sc.id, len(ims))
	runtime.GC()
	values, err := sc.together(e, ims, r)
	if err != nil {
		return fmt.Errorf("%s, %s: %w", mode, sc.id, err)
	}
	for _, im := range ims {
		rep.add(mode, sc.id, im.name, values[im.name])
	}
	return nil
}

// buildImpls makes the implementations cfg selects.
func buildImpls(cfg config, srv *server, c calls) ([]*impl, error) {
	var out []*impl
	for _, k := range constructors {
		if len(cfg.impls) > 0 && !cfg.impls[k.name] {
			continue
		}
		im, err := k.make(srv, c, cfg.ttl)
		if err != nil {
			for _, done := range out {
				done.close()
			}
			return nil, fmt.Errorf("%s: %w", k.name, err)
		}
		out = append(out, im)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-impls selects none of the implementations")
	}
	return out, nil
}

// rotate is impls started at index r (mod len).
func rotate(impls []*impl, r int) []*impl {
	k := r % len(impls)
	return append(append([]*impl(nil), impls[k:]...), impls[:k]...)
}

// started is when the program started, for the progress lines.
var started = time.Now()

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peerbench: %6.1fs "+format+"\n", append([]any{time.Since(started).Seconds()}, args...)...)
}
