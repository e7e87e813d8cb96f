package sim

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
)

var recordSortedSets = flag.Bool("record-sortedsets", false,
	"rewrite testdata/sortedsets-redis70.txt from the real redis-server 7.0 in RESPIRE_REAL_REDIS70")

const sortedSetsGolden = "testdata/sortedsets-redis70.txt"

// Keys of the scripted steps below (one hash tag each, as conn names them).
const (
	semHolders = "{jobs}:sem"
	rwWriter   = "{cache}:w"
	rwReaders  = "{cache}:r"
	farFuture  = "99999999999999" // a lease end in the year 5138: live
)

// evalScript runs a conn script by source (EVAL) or, with sha, by SHA.
func evalScript(src, sha string, keys []string, args ...string) diffStep {
	all := append([]string{"EVAL", src, strconv.Itoa(len(keys))}, keys...)
	if sha != "" {
		all[0], all[1] = "EVALSHA", sha
	}
	return a(append(all, args...)...)
}

func semAcquire(token, limit string) diffStep {
	return evalScript(conn.SemaphoreAcquireScript, conn.SemaphoreAcquireScriptSHA,
		[]string{semHolders}, token, "60000", limit)
}

func holderScript(src, sha string, keys []string, args ...string) diffStep {
	return evalScript(src, sha, keys, args...)
}

var (
	semKeys = []string{semHolders}
	rwKeys  = []string{rwWriter, rwReaders}
)

// sortedSetCommandSteps cover the sorted-set commands and TIME: options,
// argument errors in the server's order, score parsing and printing,
// WRONGTYPE both ways, empty sets deleted, TTLs.
var sortedSetCommandSteps = []diffStep{
	a("ZADD", "z", "1", "a"), a("ZADD", "z", "NX", "2", "a"), a("ZADD", "z", "XX", "3", "a"), a("ZADD", "z", "XX", "3", "b"),
	a("ZADD", "z", "NX", "XX", "3", "b"), a("ZADD", "z", "CH", "5", "a", "6", "b"), a("ZADD", "z", "GT", "1", "a"),
	a("ZADD", "z", "GT", "CH", "9", "a"), a("ZADD", "z", "LT", "GT", "1", "a"), a("ZADD", "z", "NX", "GT", "1", "a"),
	a("ZADD", "z", "1"), a("ZADD", "z", "NX", "1"), a("ZADD", "z", "x", "a"), a("ZADD", "z", "1", "a", "2"),
	a("ZADD", "z", "nan", "a"), a("ZADD", "z", "inf", "c"), a("ZADD", "z", "-inf", "d"), a("ZADD", "z", "1.5", "e"),
	a("ZADD", "z", "0.1", "f"), a("ZADD", "z", "1e3", "g"), a("ZADD", "z", " 1", "h"), a("ZADD", "z", "1 ", "h"),
	a("ZADD", "z", "+1", "h"), a("ZADD", "z", "0x10", "h"), a("ZADD", "z", "INCR", "1", "a"),
	a("ZADD", "z", "INCR", "1", "a", "2", "b"), a("ZADD", "z", "NX", "INCR", "1", "a"),
	a("ZSCORE", "z", "a"), a("ZSCORE", "z", "c"), a("ZSCORE", "z", "d"), a("ZSCORE", "z", "e"), a("ZSCORE", "z", "f"),
	a("ZSCORE", "z", "g"), a("ZSCORE", "z", "h"), a("ZSCORE", "z", "nope"), a("ZSCORE", "nokey", "a"), a("ZSCORE", "z"),
	a("ZCARD", "z"), a("ZCARD", "nokey"), a("ZCARD", "z", "x"), a("ZCOUNT", "z", "-inf", "+inf"), a("ZCOUNT", "z", "(1", "5"),
	a("ZCOUNT", "z", "x", "5"), a("ZCOUNT", "z", "(", "5"), a("ZCOUNT", "nokey", "0", "1"), a("ZCOUNT", "z", "", " 2"),
	a("ZCOUNT", "z", " 1", "+inf"), a("ZCOUNT", "z", "1e400", "+inf"), a("ZCOUNT", "z", "-1e400", "+inf"),
	a("ZCOUNT", "z", "nan", "1"), a("ZCOUNT", "z", "(nan", "1"), a("ZCOUNT", "z", "((1", "3"), a("ZCOUNT", "z", "0x1", "3"),
	a("ZCOUNT", "z", "3", "1"), a("ZCOUNT", "z", "2 ", "3"), a("ZCOUNT", "z", "-inf", "(2"), a("ZCOUNT", "z", "infinity", "+INF"),
	a("ZCOUNT", "z", "1", "inf"), a("ZCOUNT", "z", "1"),
	a("ZADD", "z", "1e400", "x"), a("ZADD", "z", "1e-400", "x"), a("ZADD", "z", "1e-310", "x"), a("ZADD", "z", "0x1p3", "y"),
	a("ZADD", "z", "INFINITY", "y"), a("ZADD", "z", "-0", "y"), a("ZSCORE", "z", "y"), a("ZADD", "z", "1_0", "y"),
	a("ZADD", "z", ".5", "y"), a("ZADD", "z", "5.", "y"), a("ZADD", "z", "", "y"), a("ZADD", "z", "1e", "y"),
	a("ZADD", "z", "0x", "y"), a("ZADD", "z", "0x.8", "y"), a("ZSCORE", "z", "y"), a("ZSCORE", "z", "x"),
	a("ZADD", "z", "INCR", "+inf", "y"), a("ZADD", "z", "INCR", "-inf", "y"), a("ZSCORE", "z", "y"),
	a("ZADD", "z", "xx", "ch", "gt", "100", "a"), a("ZADD", "z", "GT", "5", "new"), a("ZADD", "z", "XX", "INCR", "1", "nope"),
	a("ZADD", "z", "LT", "INCR", "1", "a"), a("ZADD", "z", "3", "a", "3", "a"), a("ZADD", "z", "4", "a", "5", "a"),
	a("ZSCORE", "z", "a"), a("ZADD", "z", "1", "x", "bad", "y"), a("ZSCORE", "z", "x"),
	a("ZADD", "nokey", "XX", "1", "a"), a("EXISTS", "nokey"), a("ZADD", "nokey", "XX", "INCR", "1", "a"),
	a("ZADD", "z", "1.25", "q"), a("ZSCORE", "z", "q"), a("ZADD", "z", "1e20", "q"), a("ZSCORE", "z", "q"),
	a("ZADD", "z", "123456789012345678", "q"), a("ZSCORE", "z", "q"), a("ZADD", "z", "1e-5", "q"), a("ZSCORE", "z", "q"),
	a("ZADD", "z", "1733000000123", "q"), a("ZSCORE", "z", "q"),
	a("ZREMRANGEBYSCORE", "z", "x", "1"), a("ZREMRANGEBYSCORE", "nokey", "x", "1"), a("ZREMRANGEBYSCORE", "nokey", "0", "1"),
	a("ZREMRANGEBYSCORE", "z", "-inf", "(0"), a("ZREMRANGEBYSCORE", "z", "5", "1"), a("ZREMRANGEBYSCORE", "z"),
	a("ZREM", "z", "a", "nope"), a("ZREM", "nokey", "a"), a("ZREM", "z"), a("ZCARD", "z"),
	// Types: sorted sets against strings and lists, both ways.
	a("SET", "s", "v"), a("RPUSH", "l", "x"), a("ZADD", "s", "1", "a"), a("ZADD", "l", "1", "a"), a("ZSCORE", "s", "a"),
	a("ZCARD", "s"), a("ZCOUNT", "s", "0", "1"), a("ZREM", "s", "a"), a("ZREMRANGEBYSCORE", "s", "0", "1"),
	a("ZREMRANGEBYSCORE", "s", "x", "1"), a("ZADD", "s", "x", "a"), a("GET", "z"), a("SET", "z", "v", "GET"), a("INCR", "z"),
	a("RPUSH", "z", "x"), a("MGET", "z", "s"), a("EXISTS", "z"), a("PTTL", "z"), a("PEXPIRE", "z", "100000"), a("PTTL", "z"),
	a("SET", "z2", "v"), a("DEL", "z2"), a("ZADD", "z2", "1", "m"), a("SET", "z2", "v"), a("GET", "z2"),
	a("ZREMRANGEBYSCORE", "z", "-inf", "+inf"), a("EXISTS", "z"), a("ZADD", "z", "1", "a"), a("ZREM", "z", "a", "b"),
	a("EXISTS", "z"),
	a("TIME"), a("TIME", "x"),
	a("EVAL", "local t = redis.call('time') return {type(t[1]), type(t[2]), #t}", "0"),
	a("EVAL", "return redis.call('zscore', KEYS[1], 'nope')", "1", "z"),
	a("ZADD", "z", "0.1", "m"), a("EVAL", "return redis.call('zscore', KEYS[1], 'm')", "1", "z"),
	a("EVAL", "return redis.call('zadd', KEYS[1], 1733000000123 + 30000, 'n')", "1", "z"), a("ZSCORE", "z", "n"),
	a("EVAL", "return redis.call('zcount', KEYS[1], 0, 1)", "1", "s"),
	a("EVAL", "return redis.pcall('zcount', KEYS[1], 0, 1)", "1", "s"),
	a("EVAL", "return redis.call('zcount', KEYS[1], 'x', 1)", "1", "z"),
	a("EVAL", "return redis.error_reply('LIMITMISMATCH semaphore limit is 8, not 4')", "0"),
	a("EVAL", "return {redis.call('del', unpack(KEYS))}", "2", "z", "s"),
}

// lockScriptSteps run every semaphore and read/write-lock script of conn,
// by EVAL and then by EVALSHA, through their outcomes. Scores come from
// the server's clock, so the steps only look at counts, TTL presence and
// the scripts' own replies (lease reads are normalized).
var lockScriptSteps = []diffStep{
	evalScript(conn.SemaphoreAcquireScript, "", semKeys, "a", "60000", "2"), semAcquire("b", "2"), semAcquire("c", "2"),
	semAcquire("c", "3"), a("ZCARD", semHolders), a("ZSCORE", semHolders, ""), a("PTTL", semHolders),
	semAcquire("a", "2"), a("ZCARD", semHolders),
	evalScript(conn.HolderCountScript, "", semKeys[:1]), evalScript(conn.HolderCountScript, conn.HolderCountScriptSHA, semKeys[:1]),
	evalScript(conn.HolderLeaseScript, "", semKeys[:1], "a"), holderScript(conn.HolderLeaseScript, conn.HolderLeaseScriptSHA, semKeys[:1], "zz"),
	a("ZADD", semHolders, "1", "dead"), holderScript(conn.HolderCountScript, conn.HolderCountScriptSHA, semKeys[:1]),
	holderScript(conn.HolderLeaseScript, conn.HolderLeaseScriptSHA, semKeys[:1], "dead"),
	evalScript(conn.HolderRenewScript, "", semKeys, "dead", "30000"),
	holderScript(conn.HolderRenewScript, conn.HolderRenewScriptSHA, semKeys, "a", "30000"),
	holderScript(conn.HolderRenewScript, conn.HolderRenewScriptSHA, semKeys, "zz", "30000"),
	evalScript(conn.HolderReleaseScript, "", semKeys, "dead"), a("ZCARD", semHolders),
	a("ZADD", semHolders, "1", "dead2"), semAcquire("c", "2"), a("ZCARD", semHolders),
	holderScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, semKeys, "a"), a("EXISTS", semHolders),
	holderScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, semKeys, "b"), a("EXISTS", semHolders),
	holderScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, semKeys, "b"),
	a("ZADD", semHolders, "1", "dead3"), semAcquire("c", "3"), a("ZSCORE", semHolders, ""), a("ZCARD", semHolders),
	a("ZADD", semHolders, farFuture, "future"), semAcquire("d", "3"), semAcquire("e", "3"), semAcquire("e", "4"),
	holderScript(conn.HolderCountScript, conn.HolderCountScriptSHA, semKeys[:1]),
	a("DEL", semHolders+":limit"), semAcquire("e", "4"), a("ZSCORE", semHolders, ""),
	a("ZREM", semHolders, ""), semAcquire("e", "3"), semAcquire("e", "4"), a("ZSCORE", semHolders, ""),
	semAcquire("", "3"), holderScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, semKeys, ""),
	holderScript(conn.HolderRenewScript, conn.HolderRenewScriptSHA, semKeys, "", "60000"),
	holderScript(conn.HolderLeaseScript, conn.HolderLeaseScriptSHA, semKeys, ""),
	a("SET", "str", "v"), a("RPUSH", "list", "x"),
	evalScript(conn.SemaphoreAcquireScript, conn.SemaphoreAcquireScriptSHA, []string{"str"}, "a", "60000", "2"),
	evalScript(conn.SemaphoreAcquireScript, conn.SemaphoreAcquireScriptSHA, []string{"list"}, "a", "60000", "2"),
	evalScript(conn.HolderRenewScript, conn.HolderRenewScriptSHA, []string{"str"}, "a", "60000"),
	evalScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, []string{"str"}, "a"),
	evalScript(conn.HolderLeaseScript, conn.HolderLeaseScriptSHA, []string{"str"}, "a"),
	evalScript(conn.HolderCountScript, conn.HolderCountScriptSHA, []string{"str"}),
	// Read/write lock.
	evalScript(conn.ReadAcquireScript, "", rwKeys, "r1", "60000"),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, rwKeys, "r2", "60000"), a("ZCARD", rwReaders),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, rwKeys, "r2", "60000"), a("ZCARD", rwReaders),
	a("PTTL", rwReaders), evalScript(conn.WriteAcquireScript, "", rwKeys, "w1", "60000", "60000"), a("GET", rwWriter),
	a("PTTL", rwWriter), evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, rwKeys, "r3", "60000"),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "w2", "60000", "60000"),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "w1", "60000", "60000"),
	evalScript(conn.HolderRenewScript, conn.HolderRenewScriptSHA, rwKeys[1:], "r1", "60000"),
	evalScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, rwKeys[1:], "r1"),
	evalScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, rwKeys[1:], "r2"), a("EXISTS", rwReaders),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "w2", "60000", "60000"),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "w1", "60000", "60000"), a("GET", rwWriter),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "w1", "60000", "60000"),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, rwKeys, "r3", "60000"),
	evalScript(conn.HolderRenewScript, conn.HolderRenewScriptSHA, rwKeys[1:], "r1", "60000"),
	evalScript(conn.ReleaseScript, "", rwKeys[:1], "waiting:w1"),
	evalScript(conn.ReleaseScript, conn.ReleaseScriptSHA, rwKeys[:1], "w1"),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, rwKeys, "r3", "60000"),
	a("ZADD", rwReaders, "1", "deadr"), evalScript(conn.HolderCountScript, conn.HolderCountScriptSHA, rwKeys[1:]),
	evalScript(conn.HolderReleaseScript, conn.HolderReleaseScriptSHA, rwKeys[1:], "r3"), a("EXISTS", rwReaders),
	a("ZADD", rwReaders, "1", "deadr"), evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "w3", "60000", "60000"),
	a("EXISTS", rwReaders), a("GET", rwWriter),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, rwKeys, "waiting:x", "60000", "60000"),
	a("SET", "str", "v"),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, []string{"{y}:w", "str"}, "w", "60000", "60000"),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, []string{"list", "str"}, "w", "60000", "60000"),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, []string{"{y}:w", "str"}, "r", "60000"),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, []string{"list", "{y}:r"}, "r", "60000"),
	evalScript(conn.ReadAcquireScript, conn.ReadAcquireScriptSHA, []string{"str", "list"}, "r", "60000"),
	evalScript(conn.WriteAcquireScript, conn.WriteAcquireScriptSHA, []string{"str", "list"}, "w", "60000", "60000"),
	evalScript(conn.FencedAcquireScript, "", []string{"list", "{y}:fence"}, "f", "60000"),
	evalScript(conn.FencedAcquireScript, conn.FencedAcquireScriptSHA, []string{"str", "list"}, "f", "60000"),
	evalScript(conn.FencedAcquireScript, conn.FencedAcquireScriptSHA, []string{"{y}:lease", "list"}, "f", "60000"),
}

var (
	timeReply     = regexp.MustCompile(`^\*2\r\n\$\d+\r\n\d+\r\n\$\d+\r\n\d+\r\n$`)
	positiveReply = regexp.MustCompile(`^:[1-9]\d*\r\n$`)
)

// normalizeSortedSets hides what differs by nature: TIME's value, TTLs and
// the lease left that HolderLeaseScript reports.
func normalizeSortedSets(args []string, r string) string {
	r = normalize(args, r)
	switch {
	case strings.EqualFold(args[0], "TIME") && timeReply.MatchString(r):
		return "<time>"
	case len(args) > 1 && (args[1] == conn.HolderLeaseScript || args[1] == conn.HolderLeaseScriptSHA) &&
		positiveReply.MatchString(r):
		return ":<lease left>\r\n"
	}
	return r
}

var sortedSetSteps = append(append([]diffStep{}, sortedSetCommandSteps...), lockScriptSteps...)

// sortedSetReplies runs the steps on addr in RESP2 and RESP3.
func sortedSetReplies(t *testing.T, addr, password string) map[int][]string {
	return map[int][]string{
		2: runSteps(t, addr, password, 2, sortedSetSteps, normalizeSortedSets),
		3: runSteps(t, addr, password, 3, sortedSetSteps, normalizeSortedSets),
	}
}

// TestSimulatorRepliesLikeTheServers_SortedSetsAndLockScripts compares, byte
// for byte, every sorted-set command, TIME and every semaphore and
// read/write-lock script on the simulator's four profiles with the replies
// of a real redis-server 7.0: recorded in testdata (rewrite with
// -record-sortedsets), and live when RESPIRE_REAL_REDIS70 names one.
func TestSimulatorRepliesLikeTheServers_SortedSetsAndLockScripts(t *testing.T) {
	want := realSortedSetReplies(t)
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startSim(t, Config{Profile: p, Password: "pw"})
			got := sortedSetReplies(t, s.Addr(), "pw")
			for _, proto := range []int{2, 3} {
				for i := range sortedSetSteps {
					if got[proto][i] != want[proto][i] {
						t.Errorf("RESP%d step %d %q:\n sim  %q\n real %q", proto, i, sortedSetSteps[i].args, got[proto][i], want[proto][i])
					}
				}
			}
		})
	}
}

// realSortedSetReplies returns the real server's replies: live (checked
// against, or with -record-sortedsets written to, the recording) or the
// recording.
func realSortedSetReplies(t *testing.T) map[int][]string {
	recorded, readErr := readSortedSetsGolden()
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		if *recordSortedSets {
			t.Fatal("-record-sortedsets needs RESPIRE_REAL_REDIS70")
		}
		if readErr != nil {
			t.Fatalf("no real server and no recording: %v", readErr)
		}
		return recorded
	}
	realserver.Lock(t, addr)
	live := sortedSetReplies(t, addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"))
	if *recordSortedSets {
		writeSortedSetsGolden(t, live)
		return live
	}
	for _, proto := range []int{2, 3} {
		for i := range sortedSetSteps {
			if readErr != nil || recorded[proto][i] != live[proto][i] {
				t.Fatalf("%s is out of date (step %d): run with RESPIRE_REAL_REDIS70 and -record-sortedsets", sortedSetsGolden, i)
			}
		}
	}
	return live
}

// The recording holds one line per reply: "<proto> <step> <quoted reply>".
func readSortedSetsGolden() (map[int][]string, error) {
	f, err := os.Open(sortedSetsGolden)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int][]string{2: make([]string, len(sortedSetSteps)), 3: make([]string, len(sortedSetSteps))}
	seen := 0
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var proto, step int
		var quoted string
		if _, err := fmt.Sscanf(lines.Text(), "%d %d %q", &proto, &step, &quoted); err != nil {
			return nil, fmt.Errorf("%s: %q: %v", sortedSetsGolden, lines.Text(), err)
		}
		if out[proto] == nil || step < 0 || step >= len(sortedSetSteps) {
			return nil, fmt.Errorf("%s: %q: no such step", sortedSetsGolden, lines.Text())
		}
		out[proto][step] = quoted
		seen++
	}
	if seen != 2*len(sortedSetSteps) {
		return nil, fmt.Errorf("%s holds %d replies; want %d", sortedSetsGolden, seen, 2*len(sortedSetSteps))
	}
	return out, lines.Err()
}

func writeSortedSetsGolden(t *testing.T, replies map[int][]string) {
	var b strings.Builder
	for _, proto := range []int{2, 3} {
		for i, r := range replies[proto] {
			fmt.Fprintf(&b, "%d %d %q\n", proto, i, r)
		}
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sortedSetsGolden, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sortedSetTypeSteps: the newer servers' conditional string commands on a
// sorted set. server-replies.md records them on a list; a sorted set takes
// the same non-string path in every server (checkType / "type is not
// string"), so the replies are the list's.
var sortedSetTypeSteps = []step{
	{cmd("ZADD", "zk", "1", "m"), all(":1\r\n")},
	{cmd("SET", "zk", "v", "IFEQ", "v"), per(syntaxErr, wrongTyp, wrongTyp, wrongTyp)},
	{cmd("SET", "zk", "v", "IFEQ", "v", "GET"), per(syntaxErr, wrongTyp, wrongTyp, wrongTyp)},
	{cmd("DIGEST", "zk"), per(unk("DIGEST", "zk"), wrongTyp, unk("DIGEST", "zk"), unk("DIGEST", "zk"))},
	{cmd("DELIFEQ", "zk", "v"), per(unk("DELIFEQ", "zk", "v"), unk("DELIFEQ", "zk", "v"), unk("DELIFEQ", "zk", "v"), wrongTyp)},
	{cmd("DELEX", "zk", "IFEQ", "v"), per(unk("DELEX", "zk", "IFEQ", "v"),
		"-ERR Key should be of string type if conditions are specified\r\n", unk("DELEX", "zk", "IFEQ", "v"), unk("DELEX", "zk", "IFEQ", "v"))},
	{cmd("DELEX", "zk"), per(unk("DELEX", "zk"), ":1\r\n", unk("DELEX", "zk"), unk("DELEX", "zk"))},
	{cmd("SET", "zk", "v"), all(ok)},
	{cmd("ZADD", "zk", "1", "m"), all(wrongTyp)},
}

func TestSimulatorRepliesLikeTheServers_SortedSetsAgainstNewerStringCommands(t *testing.T) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			w := dial(t, startSim(t, Config{Profile: p}).Addr())
			for _, st := range sortedSetTypeSteps {
				if got := w.do(st.cmd...); got != st.want[p] {
					t.Errorf("%q = %q; want %q", st.cmd, got, st.want[p])
				}
			}
		})
	}
}
