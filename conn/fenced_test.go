package conn_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	. "github.com/respire-go/respire/conn"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
)

func TestFencedScriptSHA1MatchesItsSource(t *testing.T) {
	sum := sha1.Sum([]byte(FencedAcquireScript))
	if got := hex.EncodeToString(sum[:]); got != FencedAcquireScriptSHA {
		t.Fatalf("sha1(FencedAcquireScript) = %s; want %s", got, FencedAcquireScriptSHA)
	}
}

func TestFencedCommandIsEvalshaThenEvalAfterNoScript(t *testing.T) {
	f := NewFencedAcquire("{j}:lease", "{j}:fence", "tok", 1500)
	want := []string{"EVALSHA", FencedAcquireScriptSHA, "2", "{j}:lease", "{j}:fence", "tok", "1500"}
	if got := f.Command(); !reflect.DeepEqual(got.Args, want) || got.Key != 3 {
		t.Fatalf("Command() = %+v; want %q key 3", got, want)
	}
	if out := f.Interpret(errReply(noScriptRedis)); out.Done {
		t.Fatalf("Interpret(NOSCRIPT) = %+v; want not done", out)
	}
	want[0], want[1] = "EVAL", FencedAcquireScript
	if got := f.Command(); !reflect.DeepEqual(got.Args, want) {
		t.Fatalf("Command() after NOSCRIPT = %q; want %q", got.Args, want)
	}
	if out := f.Interpret(errReply(noScriptRedis)); !out.Done || out.Err == nil {
		t.Fatalf("NOSCRIPT to EVAL = %+v; want a definite error (no second fallback)", out)
	}
}

func TestFencedReplyNilIsNotAcquiredAndTokenParsesAtFullPrecision(t *testing.T) {
	f := NewFencedAcquire("l", "c", "tok", 10)
	if out := f.Interpret(nilReply); !out.Done || out.Acquired || out.Err != nil || out.Malformed != nil {
		t.Fatalf("Interpret(nil) = %+v; want done, not acquired", out)
	}
	for text, want := range map[string]int64{"1": 1, "9007199254740993": 9007199254740993,
		"9223372036854775807": 9223372036854775807} {
		out := NewFencedAcquire("l", "c", "tok", 10).Interpret(Reply{Kind: ReplyBulk, Text: text})
		if !out.Acquired || out.FencingToken != want {
			t.Errorf("Interpret(%q) = %+v; want token %d", text, out, want)
		}
	}
}

func TestFencedMalformedRepliesAreProtocolErrors(t *testing.T) {
	replies := []Reply{
		{Kind: ReplyBulk, Text: "invalid"}, {Kind: ReplyBulk, Text: "0"}, {Kind: ReplyBulk, Text: "-1"},
		{Kind: ReplyBulk, Text: "9223372036854775808"}, {Kind: ReplyBulk, Text: "01"},
		{Kind: ReplyBulk, Text: "+5"}, {Kind: ReplyBulk, Text: ""}, {Kind: ReplyInt, Int: 5}, okReply,
	}
	for _, r := range replies {
		out := NewFencedAcquire("l", "c", "tok", 10).Interpret(r)
		if !out.Done || out.Acquired || !errors.Is(out.Malformed, ErrMalformedFencingToken) {
			t.Errorf("Interpret(%+v) = %+v; want a malformed-token protocol error", r, out)
		}
	}
}

func TestFencedServerErrorsAndRedirectsAreDefinite(t *testing.T) {
	out := NewFencedAcquire("l", "c", "tok", 10).Interpret(errReply("ERR fencing counter must not expire"))
	if !out.Done || out.Err == nil || out.Err.Code != "ERR" || out.Malformed != nil {
		t.Fatalf("Interpret(ERR) = %+v; want a definite server error", out)
	}
	out = NewFencedAcquire("l", "c", "tok", 10).Interpret(errReply("MOVED 12 127.0.0.1:7001"))
	if !out.Done || out.Redirect == nil || out.Redirect.Slot != 12 {
		t.Fatalf("Interpret(MOVED) = %+v; want a redirect", out)
	}
}

// fencedServer is one server the fenced script runs on.
type fencedServer struct {
	name   string
	client *Pool
	exec   func(args ...string) string // admin command, RESP2 reply text
	prefix string
}

func fencedServers(t *testing.T) []fencedServer {
	var out []fencedServer
	for _, p := range sim.Profiles {
		srv := startSim(t, p)
		out = append(out, fencedServer{string(p), newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword)), srv.Exec, ""})
	}
	if addr := os.Getenv("RESPIRE_REAL_REDIS70"); addr != "" {
		lockRealServer(t, addr)
		password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
		client := newOutsider(t, []string{addr}, "", password)
		exec := func(args ...string) string {
			msg, err := client.Do(ctxT(t), client.B().Arbitrary(args...).Build()).ToMessage()
			if err != nil {
				return "-" + err.Error()
			}
			if n, err := msg.AsInt64(); err == nil {
				return ":" + strconv.FormatInt(n, 10)
			}
			s, _ := msg.ToString()
			return s
		}
		prefix := "conn-fenced-" + strings.ReplaceAll(t.Name(), "/", "-") + ":"
		exec("DEL", prefix+"{j}:lease", prefix+"{j}:fence", prefix+"same")
		out = append(out, fencedServer{"real-redis-7.0", newPool(t, newClient(t, []string{addr}, "", password)), exec, prefix})
	}
	return out
}

func TestFencedScriptGrantsIncreasingTokensAndLeavesContendedCounterAlone(t *testing.T) {
	for _, s := range fencedServers(t) {
		t.Run(s.name, func(t *testing.T) {
			lease, fence := s.prefix+"{j}:lease", s.prefix+"{j}:fence"
			res, err := acquireFenced(ctxT(t), s.client, lease, fence, "a", 60000)
			if err != nil || !res.Acquired || res.FencingToken != 1 {
				t.Fatalf("first AcquireFenced = %+v, %v; want token 1", res, err)
			}
			res, err = acquireFenced(ctxT(t), s.client, lease, fence, "b", 60000)
			if err != nil || res.Acquired {
				t.Fatalf("contended AcquireFenced = %+v, %v; want not acquired", res, err)
			}
			if got := s.exec("GET", fence); !strings.Contains(got, "1") || strings.Contains(got, "2") {
				t.Fatalf("counter after contention = %q; want 1", got)
			}
			s.exec("DEL", lease)
			res, err = acquireFenced(ctxT(t), s.client, lease, fence, "b", 60000)
			if err != nil || res.FencingToken != 2 {
				t.Fatalf("second owner = %+v, %v; want token 2", res, err)
			}
		})
	}
}

func TestFencedScriptRejectsIdenticalKeysWithoutMutation(t *testing.T) {
	for _, s := range fencedServers(t) {
		t.Run(s.name, func(t *testing.T) {
			key := s.prefix + "same"
			_, err := acquireFenced(ctxT(t), s.client, key, key, "a", 60000)
			if ClassOf(err) != Definite || !strings.Contains(err.Error(), "lock and fencing counter keys must differ") {
				t.Fatalf("acquireFenced(same keys) error = %v; want the keys-must-differ server error", err)
			}
			if got := s.exec("EXISTS", key); !strings.Contains(got, "0") {
				t.Fatalf("EXISTS after refusal = %q; want 0", got)
			}
		})
	}
}

func TestFencedScriptMissingFromCacheFallsBackToEvalOnce(t *testing.T) {
	srv := startSim(t, sim.Redis70)
	client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	res, err := acquireFenced(ctxT(t), client, "{j}:lease", "{j}:fence", "a", 60000)
	if err != nil || res.FencingToken != 1 {
		t.Fatalf("AcquireFenced = %+v, %v", res, err)
	}
	var sent []string
	for _, e := range srv.Log() {
		if strings.HasPrefix(strings.ToUpper(e.Args[0]), "EVAL") {
			sent = append(sent, e.Args[0])
		}
	}
	if want := []string{"EVALSHA", "EVAL"}; !reflect.DeepEqual(sent, want) {
		t.Fatalf("commands = %q; want %q", sent, want)
	}
}

func TestFencedAcquisitionLostReplyIsUncertainAndNotReplayed(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	client := newClient(t, []string{srv.Addr()}, "", simPassword)
	srv.Exec("SCRIPT", "LOAD", FencedAcquireScript)
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "EVALSHA"})
	_, err := acquireFenced(ctxT(t), newPool(t, client), "{j}:lease", "{j}:fence", "a", 60000)
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("AcquireFenced after a lost reply = %v; want ErrOutcomeUnknown", err)
	}
	evals := 0
	for _, e := range srv.Log() {
		if strings.HasPrefix(strings.ToUpper(e.Args[0]), "EVAL") {
			evals++
		}
	}
	if evals != 1 || srv.Exec("GET", "{j}:fence") != "$1\r\n1\r\n" {
		t.Fatalf("EVAL* sent %d times, counter %q; want exactly one, counter 1", evals, srv.Exec("GET", "{j}:fence"))
	}
}

func TestFencedCrossSlotKeysAreNotSubmittedInClusterMode(t *testing.T) {
	c := startCluster(t, sim.Redis70, sim.Valkey90)
	client := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	_, err := acquireFenced(ctxT(t), client, "a:lease", "b:fence", "tok", 60000)
	if !errors.Is(err, ErrNotSubmitted) || !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("acquireFenced(cross-slot) = %v; want not submitted, ErrCrossSlot", err)
	}
	res, err := acquireFenced(ctxT(t), client, "{invoice:42}:lease", "{invoice:42}:fence", "tok", 60000)
	if err != nil || res.FencingToken != 1 {
		t.Fatalf("acquireFenced(hash-tagged) = %+v, %v; want token 1", res, err)
	}
}

// acquireFenced is the fenced acquisition as the engine runs it
// (FencedAcquireOp on the lease key's session).
func acquireFenced(ctx context.Context, p *Pool, leaseKey, counterKey, token string, ttlMillis int64) (FencedResult, error) {
	res, err := p.Do(ctx, FencedAcquireOp(leaseKey, counterKey, token, ttlMillis), nil)
	return FencedResult{Acquired: res.Owned, FencingToken: res.FencingToken}, err
}
