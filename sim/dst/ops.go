package dst

import (
	"context"
	"strconv"
	"strings"

	"github.com/respire-go/respire/conn"
)

// opRun is the checker's record of one lock operation the driver handed
// the transport (a Transport.Do, a Session.Do, one renewal of an
// ExtendMany batch): its owner token and every command it wrote. The
// token maps it to the handle, or to the acquisition try, it belongs to.
type opRun struct {
	id        int64
	proc      *process
	name      string // conn.Op.Name(): "acquire", "extend", "release", "owner", "fenced-acquire"
	key       string
	token     string
	sent      int         // commands written
	replied   bool        // the last written command got a reply
	confirmed bool        // ... and it was a fallback-confirming or redirect reply
	last      *connection // the connection that carried the last written command
	ended     bool
	uncertain bool  // it ended with an Uncertain error
	scriptRun int64 // a fenced acquisition: the script run that handed out its token
}

// isWrite reports whether the op may change the key (every op but the
// reads: GET, a holder's lease read, a count).
func (op *opRun) isWrite() bool {
	switch op.name {
	case "owner", "semaphore-lease", "read-lease", "owner-lease", "semaphore-holders", "readers", "fair-waiters", "fair-overtaken":
		return false
	}
	return true
}

// isRelease reports whether the op is a compare-and-delete of its token
// (a key's, a waiting marker's, a holder's).
func (op *opRun) isRelease() bool {
	return op.name == "release" || op.name == "semaphore-release" || op.name == "read-release" || op.name == "fair-release"
}

// isRenew reports whether the op is a renewal of its token's lease.
func (op *opRun) isRenew() bool {
	return op.name == "extend" || op.name == "semaphore-renew" || op.name == "read-renew"
}

// newOp records an operation the driver started; its token is read from
// its first command (run) when the caller does not know it.
func (w *world) newOp(p *process, op conn.Op, token string) *opRun {
	return &opRun{id: w.id(), proc: p, name: op.Name(), key: op.Key(), token: token}
}

// tokenOf returns the owner token a lock command carries ("" for GET).
func tokenOf(cmd conn.Command) string {
	switch a := cmd.Args; {
	case len(a) == 0:
	case a[0] == "SET" && len(a) > 2, a[0] == "DELIFEQ" && len(a) > 2:
		return a[2]
	case a[0] == "DELEX" && len(a) > 3:
		return a[3]
	case (a[0] == "EVALSHA" || a[0] == "EVAL") && len(a) > 3:
		if n, err := strconv.Atoi(a[2]); err == nil && 3+n < len(a) {
			return a[3+n]
		}
	}
	return ""
}

// wrote records that rec's latest command went out on c.
func (op *opRun) wrote(c *connection) {
	op.sent++
	op.replied, op.confirmed, op.last = false, false, c
}

// opEnded tells the checker how the driver learned the op ended (err nil:
// an answer). From an Uncertain end on, the driver knows the op may still
// run; a NotSubmitted end must be the truth.
func (w *world) opEnded(op *opRun, err error) {
	op.ended = true
	switch conn.ClassOf(err) {
	case conn.Uncertain:
		op.uncertain = true
		w.stats.Uncertain++
		w.check.onUncertain(w, op)
	case conn.NotSubmitted:
		w.stats.NotSubmitted++
		w.check.onNotSubmitted(w, op)
	}
	if w.trace.enabled {
		outcome := "answered"
		if err != nil {
			outcome = conn.ClassOf(err).String() + ": " + err.Error()
		}
		w.trace.logf(w, op.proc, "", "%s op %d ends %s", op.name, op.id, outcome)
	}
}

// Do implements conn.Session: op on this session only, through its
// fallback steps; a redirect is a Definite *conn.Error with Redirect set
// (the session is then retired).
func (s *simSession) Do(ctx context.Context, op conn.Op, route *conn.Route) (conn.Result, error) {
	if lease, counter, ok := op.FencedKeys(); ok {
		if err := s.t.CheckFencedKeys(lease, counter); err != nil {
			return conn.Result{}, err
		}
	}
	if err := op.Invalid(); err != nil {
		return conn.Result{}, err
	}
	rec := s.t.w.newOp(s.t.p, op, "")
	res, err := s.run(ctx, op, false, route, rec)
	s.t.w.opEnded(rec, err)
	return res, err
}

// run drives op's pure protocol (conn.Op.Machine) on this session (after
// ASKING when asking), one exchange per step, as conn's sessions do.
func (s *simSession) run(ctx context.Context, op conn.Op, asking bool, route *conn.Route, rec *opRun) (conn.Result, error) {
	name := op.Name()
	o, fenced, script := op.Machine(s.caps.Load())
	if script != nil {
		return s.runScript(ctx, op, script, asking, route, rec)
	}
	if rec.token == "" && o != nil {
		rec.token = tokenOf(o.Command())
	} else if rec.token == "" {
		rec.token = tokenOf(fenced.Command())
	}
	for {
		cmd := s.t.w.command(op, o, fenced)
		cmds, recs := []conn.Command{cmd}, []*opRun{rec}
		if asking {
			cmds, recs = []conn.Command{conn.AskingCommand(), cmd}, []*opRun{nil, rec}
		}
		replies, err := s.exchange(ctx, recs, name, cmds, route)
		if err != nil {
			if s.t.w.mutateFallback(o, err) {
				ctx = context.WithoutCancel(ctx) // the broken variant sends the next step anyway
				continue
			}
			return conn.Result{Session: s}, err
		}
		r := replies[len(replies)-1]
		var res conn.Result
		var done bool
		if o != nil {
			res, done, err = s.interpret(name, o, r)
		} else {
			res, done, err = s.interpretFenced(name, fenced, r, rec)
		}
		if done {
			return res, err
		}
		s.t.w.stats.Fallbacks++
	}
}

// command is the op's current command; MutationRenewWithoutCompare
// rewrites a renewal into a PEXPIRE without the owner compare.
func (w *world) command(op conn.Op, o *conn.Operation, fenced *conn.FencedAcquire) conn.Command {
	if o == nil {
		return fenced.Command()
	}
	if w.opt.Mutation == MutationRenewWithoutCompare && op.Name() == "extend" {
		cmd := o.Command()
		return conn.Command{Args: []string{"PEXPIRE", cmd.Args[cmd.Key], cmd.Args[len(cmd.Args)-1]}, Key: 1}
	}
	return o.Command()
}

// mutateFallback is MutationFallbackAfterTimeout: when a ladder step's
// wait ended after its write, pretend its reply was the confirming one and
// go on with the next step. It reports whether it did.
func (w *world) mutateFallback(o *conn.Operation, err error) bool {
	if w.opt.Mutation != MutationFallbackAfterTimeout || o == nil || conn.ClassOf(err) != conn.Uncertain {
		return false
	}
	var fake string
	switch o.Step() {
	case conn.StepSetIfeq:
		fake = "ERR syntax error"
	case conn.StepDelex:
		fake = "ERR unknown command 'DELEX', with args beginning with: "
	case conn.StepDelifeq:
		fake = "ERR unknown command 'DELIFEQ', with args beginning with: "
	case conn.StepExtendEvalsha, conn.StepReleaseEvalsha:
		fake = "NOSCRIPT No matching script."
	default:
		return false
	}
	return !o.Interpret(conn.Reply{Kind: conn.ReplyError, Text: fake}).Done
}

// interpret consumes a reply of an acquisition, extension, release or
// owner query; done false means the next fallback step is due.
func (s *simSession) interpret(name string, o *conn.Operation, r conn.Reply) (conn.Result, bool, error) {
	out := o.Interpret(r)
	if added := s.caps.AddNew(out.Learned); added != 0 {
		s.t.w.trace.logf(s.t.w, s.t.p, "", "session id=%d learned %s", s.conn.clientID, added)
	}
	if !out.Done {
		return conn.Result{}, false, nil
	}
	if out.Redirect != nil || out.Err != nil {
		res, err := s.finishError(name, o.Command(), out.Redirect, out.Err)
		return res, true, err
	}
	return conn.Result{Owned: out.Owned, Token: out.Value, Session: s}, true, nil
}

// interpretFenced consumes a reply of the fenced acquisition script.
func (s *simSession) interpretFenced(name string, f *conn.FencedAcquire, r conn.Reply, rec *opRun) (conn.Result, bool, error) {
	out := f.Interpret(r)
	switch {
	case !out.Done:
		return conn.Result{}, false, nil // NOSCRIPT: the script did not run; EVAL it
	case out.Redirect != nil || out.Err != nil:
		res, err := s.finishError(name, f.Command(), out.Redirect, out.Err)
		return res, true, err
	case out.Malformed != nil:
		return conn.Result{Session: s}, true, &conn.Error{Class: conn.Definite, Op: name, Addr: s.node.addr, Session: s,
			Code: "PROTOCOL", Err: out.Malformed}
	}
	token := out.FencingToken
	if out.Acquired {
		token = s.t.w.handOut(s.t.p, rec, token)
	}
	return conn.Result{Owned: out.Acquired, FencingToken: token, Session: s}, true, nil
}

// finishError builds the Definite error of a redirect or an error reply,
// as conn's finish does: a redirect retires the session (MOVED also
// corrects the slot map), READONLY retires it.
func (s *simSession) finishError(name string, cmd conn.Command, rd *conn.Redirect, se *conn.ServerError) (conn.Result, error) {
	e := &conn.Error{Class: conn.Definite, Op: name, Addr: s.node.addr, Session: s, Err: conn.ErrServerReply}
	if se != nil {
		e.Code, e.Err = se.Code, se
	}
	switch {
	case rd != nil:
		s.t.retire(s)
		if se == nil {
			e.Code = "ASK"
			if !rd.Ask {
				e.Code = "MOVED"
				if to := s.t.w.nodeByAddr(rd.Addr); to != nil && cmd.Key >= 0 {
					s.t.learnSlot(cmd.Args[cmd.Key], s.node, to)
				}
			}
		}
		e.Redirect = rd
	case conn.IsReadOnlyReply(se.Message):
		s.t.retire(s)
	}
	return conn.Result{Session: s}, e
}

// ExtendMany implements conn.Session: many renewals in one pipelined
// round trip — compare-and-pexpires and holders' renewal scripts alike
// (conn.ExtendRequest.Op); a request whose first step needs a fallback
// finishes on its own afterwards. Results are in request order; a request
// whose Route aborts is not sent, nor one whose Op is not a renewal
// (conn.ErrNotBatchable).
func (s *simSession) ExtendMany(ctx context.Context, requests []conn.ExtendRequest) []conn.ExtendResult {
	w := s.t.w
	w.stats.RenewalBatches++
	b := renewalBatch{results: make([]conn.ExtendResult, len(requests)), ops: make([]*conn.Operation, len(requests)),
		scripts: make([]*conn.ScriptCall, len(requests)), recs: make([]*opRun, len(requests)), renewals: make([]conn.Op, len(requests))}
	sendErr := s.sendable(ctx)
	caps := s.caps.Load()
	for i, r := range requests {
		op := r.Renewal()
		b.renewals[i] = op
		b.recs[i] = w.newOp(s.t.p, op, r.Token)
		switch {
		case sendErr != nil:
			b.results[i].Err = s.notSent(op.Name(), sendErr)
		case !op.Batchable():
			b.results[i].Err = s.notSent(op.Name(), conn.ErrNotBatchable)
		case op.Invalid() != nil:
			b.results[i].Err = op.Invalid()
		case !r.Route.Carry(s):
			b.results[i].Err = s.notSent(op.Name(), conn.ErrAborted)
		default:
			b.ops[i], _, b.scripts[i] = op.Machine(caps)
			if b.scripts[i] != nil {
				b.recs[i].token = tokenOf(b.scripts[i].Command())
			}
		}
		b.results[i].Session = s
	}
	s.extendBatch(ctx, requests, &b)
	for i := range b.results {
		w.opEnded(b.recs[i], b.results[i].Err)
	}
	return b.results
}

// renewalBatch is one ExtendMany's state, per request: its renewal, an
// Operation (a compare-and-pexpire) or a ScriptCall (a holder's renewal),
// both nil when it is not sent, its record and its result.
type renewalBatch struct {
	renewals []conn.Op
	ops      []*conn.Operation
	scripts  []*conn.ScriptCall
	recs     []*opRun
	results  []conn.ExtendResult
}

// sent reports whether request i goes in the pipeline.
func (b *renewalBatch) sent(i int) bool { return b.ops[i] != nil || b.scripts[i] != nil }

// extendBatch sends the first step of every renewal of b in one exchange,
// then finishes each one.
func (s *simSession) extendBatch(ctx context.Context, requests []conn.ExtendRequest, b *renewalBatch) {
	var cmds []conn.Command
	var sent []*opRun
	for i := range requests {
		switch {
		case b.ops[i] != nil:
			cmds = append(cmds, s.t.w.command(b.renewals[i], b.ops[i], nil))
		case b.scripts[i] != nil:
			cmds = append(cmds, s.t.w.scriptCommand(b.scripts[i]))
		default:
			continue
		}
		sent = append(sent, b.recs[i])
	}
	if len(cmds) == 0 {
		return
	}
	replies, err := s.exchange(ctx, sent, "extend", cmds, nil)
	next := 0
	for i := range requests {
		if !b.sent(i) {
			continue
		}
		if err != nil {
			b.results[i] = conn.ExtendResult{Result: conn.Result{Session: s}, Err: err}
			continue
		}
		b.results[i] = s.finishRenewal(ctx, requests[i], b, i, replies[next])
		next++
	}
}

// finishRenewal reads request i's reply from its batch, finishing it on its
// own when its first step needs a fallback.
func (s *simSession) finishRenewal(ctx context.Context, r conn.ExtendRequest, b *renewalBatch, i int, reply conn.Reply) conn.ExtendResult {
	if call := b.scripts[i]; call != nil {
		name := b.renewals[i].Name()
		res, done, e := s.interpretScript(name, call, reply)
		if !done {
			s.t.w.stats.Fallbacks++
			res, e = s.driveScript(ctx, name, call, r.Route, b.recs[i])
		}
		return conn.ExtendResult{Result: res, Err: e}
	}
	res, done, e := s.interpret("extend", b.ops[i], reply)
	if !done {
		s.t.w.stats.Fallbacks++
		res, e = s.drive(ctx, b.ops[i], r.Route, b.recs[i])
	}
	return conn.ExtendResult{Result: res, Err: e}
}

// drive finishes a renewal from its current step on this session.
func (s *simSession) drive(ctx context.Context, o *conn.Operation, route *conn.Route, rec *opRun) (conn.Result, error) {
	for {
		cmd := s.t.w.command(conn.ExtendOp("", "", 0), o, nil)
		replies, err := s.exchange(ctx, []*opRun{rec}, "extend", []conn.Command{cmd}, route)
		if err != nil {
			return conn.Result{Session: s}, err
		}
		if res, done, err := s.interpret("extend", o, replies[0]); done {
			return res, err
		}
		s.t.w.stats.Fallbacks++
	}
}

// ProbeKill implements conn.Session: CLIENT KILL ID <own id> SKIPME yes on
// the session itself (kills nothing, answers :0); nil means permitted.
func (s *simSession) ProbeKill(ctx context.Context) error {
	if !s.hasIdentity {
		return s.notSent("probe", conn.ErrNoIdentity)
	}
	replies, err := s.exchange(ctx, []*opRun{nil}, "probe", []conn.Command{conn.ProbeKillCommand(s.identity.ID)}, nil)
	if err != nil {
		return err
	}
	if r := replies[0]; r.Kind == conn.ReplyError {
		code, _, _ := strings.Cut(r.Text, " ")
		return &conn.Error{Class: conn.Definite, Op: "probe", Addr: s.node.addr, Session: s, Code: code,
			Err: &conn.ServerError{Code: code, Message: r.Text}}
	}
	return nil
}
