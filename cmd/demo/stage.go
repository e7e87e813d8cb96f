package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// lockKey is the key every scene locks.
const lockKey = "locks:report"

// serverStart is where every simulated server's manual clock starts.
var serverStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// profileTitles are the readable names of the simulated server versions.
var profileTitles = map[sim.Profile]string{
	sim.Redis70:  "Redis 7.0",
	sim.Redis84:  "Redis 8.4",
	sim.Valkey81: "Valkey 8.1",
	sim.Valkey90: "Valkey 9.0",
}

// worker is one process of the story: its own client (named, so the wire
// log can tell whose connection sent what) and its own Locks.
type worker struct {
	name   string
	client *wire.Client
	locks  *lease.Locks
}

func newWorker(addr, password, name string, meters metric.MeterProvider) (*worker, error) {
	client := wire.New(wire.Options{Addrs: []string{addr}, Password: password, ClientName: name})
	locks, err := lease.New(client, lease.WithMeterProvider(meters))
	if err != nil {
		return nil, err
	}
	return &worker{name: name, client: client, locks: locks}, nil
}

// close closes the worker's Locks, then its client.
func (w *worker) close() {
	w.locks.Close()
	w.client.Close()
}

// report is what one profile's run found: the command ladders its
// extensions and releases used, the first time and afterwards.
type report struct {
	profile                    sim.Profile
	extendFirst, extendLater   string
	releaseFirst, releaseLater string
}

// stage is one profile's run: a simulated server with a manual expiry
// clock, and two workers.
type stage struct {
	p      *printer
	srv    *sim.Server
	clock  *sim.ManualClock
	a, b   *worker
	meters metric.MeterProvider // both workers' metrics, kept in store
	store  *meterStore
	report report
	used   map[bool]map[int64]bool // per kind (extension?), the connections that sent one
}

// openStage starts a server of profile and connects two workers to it.
// The caller must call close.
func openStage(ctx context.Context, p *printer, profile sim.Profile) (*stage, error) {
	password := rand.Text()
	clock := sim.NewManualClock(serverStart)
	srv, err := sim.Start(ctx, sim.Config{Profile: profile, Password: password, Clock: clock})
	if err != nil {
		return nil, err
	}
	s := &stage{p: p, srv: srv, clock: clock, report: report{profile: profile}, used: map[bool]map[int64]bool{}}
	s.meters, s.store = newMeters()
	if s.a, err = newWorker(srv.Addr(), password, "worker-a", s.meters); err == nil {
		s.b, err = newWorker(srv.Addr(), password, "worker-b", s.meters)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close closes the workers, then the server (which waits for its
// connections' goroutines).
func (s *stage) close() {
	for _, w := range []*worker{s.b, s.a} {
		if w != nil {
			w.close()
		}
	}
	s.srv.Close()
}

// mark returns the sequence number of the last command the server logged.
func (s *stage) mark() int64 {
	log := s.srv.Log()
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Seq
}

// since returns the commands logged after mark.
func (s *stage) since(mark int64) []sim.Entry {
	var out []sim.Entry
	for _, e := range s.srv.Log() {
		if e.Seq > mark {
			out = append(out, e)
		}
	}
	return out
}

// sessionCommands counts the commands sent after mark on the lease
// library's sessions (the connections a call sends on), leaving out a push
// watcher's reads: the invalidation of a key just deleted can reach the
// watcher after the Release that deleted it returned, and its read is not
// the call's.
func (s *stage) sessionCommands(mark int64) int {
	names := connNames(s.srv.Log())
	n := 0
	for _, e := range s.since(mark) {
		if strings.Contains(names[e.ClientID], " session") {
			n++
		}
	}
	return n
}

// note records the ladder of the extension or release sent after mark: the
// first one of the run, and the latest one sent on a connection that had
// sent one of its kind before (capabilities are learned per connection).
func (s *stage) note(mark int64, extension bool) {
	chain, id := ladder(s.since(mark), extension)
	if chain == "" {
		return
	}
	first, later := &s.report.releaseFirst, &s.report.releaseLater
	if extension {
		first, later = &s.report.extendFirst, &s.report.extendLater
	}
	used := s.used[extension]
	if used == nil {
		used = map[int64]bool{}
		s.used[extension] = used
	}
	switch {
	case *first == "":
		*first = chain
	case used[id]:
		*later = chain
	}
	used[id] = true
}

// waitFor blocks until a command after mark satisfies match.
func (s *stage) waitFor(ctx context.Context, mark int64, what string, match func(args []string) bool) error {
	_, err := s.srv.WaitFor(ctx, func(e sim.Entry) bool { return e.Seq > mark && match(e.Args) })
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// pttl reads lockKey's remaining lease on the server's (manual) clock.
func (s *stage) pttl() string { return s.pttlOf(lockKey) }

// pttlOf reads key's remaining lease on the server's (manual) clock.
func (s *stage) pttlOf(key string) string {
	reply := strings.TrimSpace(s.srv.Exec("PTTL", key))
	switch reply = strings.TrimPrefix(reply, ":"); reply {
	case "-2":
		return "no key"
	case "-1":
		return "no expiry"
	}
	return reply + " ms"
}

// say prints one line of a scene under the scene's name; scenes pass the
// name on their first line only and "" after it.
func (s *stage) say(scene, format string, args ...any) {
	s.p.line("  %-10s %s", scene, fmt.Sprintf(format, args...))
}

// isExtension reports whether args is an extension command (SET IFEQ or the
// extend script).
func isExtension(args []string) bool {
	name, ext := stepName(args)
	return name != "" && ext
}

// isAcquire reports whether args is SET ... NX.
func isAcquire(args []string) bool {
	if len(args) < 4 || !strings.EqualFold(args[0], "SET") {
		return false
	}
	for _, a := range args[3:] {
		if strings.EqualFold(a, "NX") {
			return true
		}
	}
	return false
}

// causeText names a keep-alive context's cause.
func causeText(ctx context.Context) string {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return "still running"
	case errors.Is(cause, lease.ErrOwnershipLost):
		return fmt.Sprintf("ErrOwnershipLost (%q)", cause.Error())
	case errors.Is(cause, lease.ErrReleased):
		return fmt.Sprintf("ErrReleased (%q)", cause.Error())
	case errors.Is(cause, lease.ErrKeepAliveStopped):
		return fmt.Sprintf("ErrKeepAliveStopped (%q)", cause.Error())
	}
	return cause.Error()
}
