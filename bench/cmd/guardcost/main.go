// Command guardcost sends one variant of the guarded-write benchmark's
// write (an HSET and an INCRBY: as MULTI/EXEC, or as one of the scripts
// that add the guard's steps one at a time) n times, one at a time on one
// connection, to a server: the load whose server cost guardcost.sh
// counts in instructions under callgrind (exact, and blind to the host's
// other load, unlike CPU or wall time).
//
//	guardcost -addr 127.0.0.1:6379 -password pw -variant guard-script -n 5000
//	guardcost -list
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	password := flag.String("password", os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"), "server password")
	name := flag.String("variant", "guard-script", "the variant to send (-list lists them)")
	n := flag.Int("n", 5000, "writes to send")
	list := flag.Bool("list", false, "list the variants and exit")
	flag.Parse()
	if *list {
		for _, v := range variants {
			fmt.Printf("%s\t%s\n", v.name, v.about)
		}
		return
	}
	if err := run(*addr, *password, *name, *n); err != nil {
		fmt.Fprintln(os.Stderr, "guardcost:", err)
		os.Exit(1)
	}
}

// variant is one way of sending the two writes: script ("" for
// MULTI/EXEC, with watch the guard done by WATCH) and the arguments of
// write i (keys, then ARGV).
type variant struct {
	name, about, script string
	watch               bool
	keys                func(tag string) []string
	args                func(tag string, i int) []string
}

const (
	loopSource = "for _ = 1, tonumber(ARGV[N]) do\n" +
		"  local n = tonumber(ARGV[i])\n" +
		"  redis.call(unpack(ARGV, i + 1, i + n))\n" +
		"  i = i + n + 1\n" +
		"end\n" +
		"return 1"
	compareSource = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	recordSource  = "redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])\n"
	directSource  = "redis.call('hset', KEYS[K], 'step', ARGV[A])\nredis.call('incrby', KEYS[K+1], 1)\nreturn 1"
)

// loop is GuardWritesScript's loop over the writes, their number in ARGV[count].
func loop(count int) string {
	return "local i = " + strconv.Itoa(count+1) + "\n" + strings.Replace(loopSource, "ARGV[N]", "ARGV["+strconv.Itoa(count)+"]", 1)
}

func direct(key, arg int) string {
	s := strings.ReplaceAll(directSource, "KEYS[K+1]", "KEYS["+strconv.Itoa(key+1)+"]")
	s = strings.ReplaceAll(s, "KEYS[K]", "KEYS["+strconv.Itoa(key)+"]")
	return strings.ReplaceAll(s, "ARGV[A]", "ARGV["+strconv.Itoa(arg)+"]")
}

func writes(tag string, i int) []string {
	return []string{"2", "4", "HSET", tag + ":state", "step", strconv.Itoa(i), "3", "INCRBY", tag + ":count", "1"}
}

func lockKeys(tag string) []string {
	lock := tag + ":lock"
	return []string{lock, conn.GuardRecordKey(lock), tag + ":state", tag + ":count"}
}

var variants = []variant{
	{name: "multi-exec", about: "MULTI, HSET, INCRBY, EXEC: the reference"},
	{name: "watch-multi-exec", about: "a guard without a script: WATCH and GET the lease key, compare on the client, " +
		"then MULTI, SET of the write-id record, HSET, INCRBY, EXEC (two round trips on a dedicated connection)", watch: true},
	{name: "floor-direct", about: "a script calling HSET and INCRBY by name: the floor of a script",
		script: direct(1, 1), keys: func(tag string) []string { return []string{tag + ":state", tag + ":count"} },
		args: func(_ string, i int) []string { return []string{strconv.Itoa(i)} }},
	{name: "floor-loop", about: "the writes through GuardWritesScript's loop, no guard",
		script: loop(1), keys: func(tag string) []string { return []string{tag + ":state", tag + ":count"} },
		args: func(tag string, i int) []string { return writes(tag, i) }},
	{name: "compare", about: "+ the token compare (GET)", script: compareSource + loop(2),
		keys: func(tag string) []string { return []string{tag + ":lock", tag + ":state", tag + ":count"} },
		args: func(tag string, i int) []string { return append([]string{token}, writes(tag, i)...) }},
	{name: "compare-record", about: "+ the write id recorded (SET PX, TTL given)", script: compareSource + recordSource + loop(4),
		keys: lockKeys,
		args: func(tag string, i int) []string {
			return append([]string{token, writeID(i), "10000"}, writes(tag, i)...)
		}},
	{name: "compare-record-pttl", about: "the same, the record's TTL read with PTTL (the script before this change)",
		script: compareSource + "local ttl = redis.call('pttl', KEYS[1])\nif ttl < 1 then ttl = 1 end\n" +
			"redis.call('set', KEYS[2], ARGV[2], 'PX', ttl)\n" + loop(3), keys: lockKeys,
		args: func(tag string, i int) []string { return append([]string{token, writeID(i)}, writes(tag, i)...) }},
	{name: "compare-record-direct", about: "the same, the writes called by name (no loop)",
		script: compareSource + recordSource + direct(3, 4), keys: lockKeys,
		args: func(_ string, i int) []string { return []string{token, writeID(i), "10000", strconv.Itoa(i)} }},
	{name: "guard-script", about: "conn.GuardWritesScript, as the library sends it", script: conn.GuardWritesScript,
		keys: func(tag string) []string {
			lock := tag + ":lock"
			return []string{lock, conn.GuardRecordKey(lock), conn.GuardRecordKey(lock), tag + ":state", tag + ":count"}
		},
		args: func(tag string, i int) []string {
			return append([]string{token, writeID(i), "", "10000"}, writes(tag, i)...)
		}},
}

// token is the lease key's value in the variants with a guard.
const token = "0123456789abcdef0123456789abcdef"

func writeID(i int) string { return fmt.Sprintf("%032x", i) }

func run(addr, password, name string, n int) error {
	var v *variant
	for i := range variants {
		if variants[i].name == name {
			v = &variants[i]
		}
	}
	if v == nil {
		return fmt.Errorf("no variant %q (-list)", name)
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password,
		DisableCache: true, DisableAutoPipelining: true})
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()
	tag := "{guardcost:" + name + "}"
	if err := client.Do(ctx, client.B().Set().Key(tag+":lock").Value(token).Px(time.Hour).Build()).Error(); err != nil {
		return err
	}
	sha := ""
	if v.script != "" {
		if sha, err = client.Do(ctx, client.B().ScriptLoad().Script(v.script).Build()).ToString(); err != nil {
			return err
		}
	}
	for i := range n {
		if err := send(ctx, client, v, sha, tag, i); err != nil {
			return err
		}
	}
	return nil
}

func send(ctx context.Context, client rueidis.Client, v *variant, sha, tag string, i int) error {
	b := client.B()
	if v.watch {
		return watchWrite(ctx, client, tag, i)
	}
	if v.script == "" {
		for _, r := range client.DoMulti(ctx, b.Multi().Build(),
			b.Hset().Key(tag+":state").FieldValue().FieldValue("step", strconv.Itoa(i)).Build(),
			b.Incrby().Key(tag+":count").Increment(1).Build(), b.Exec().Build()) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	}
	keys := v.keys(tag)
	reply, err := client.Do(ctx, b.Evalsha().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(v.args(tag, i)...).Build()).AsInt64()
	if err == nil && reply != 1 {
		err = fmt.Errorf("%s answered %d", v.name, reply)
	}
	return err
}

// watchWrite is the guard done with WATCH: the lease key watched and read,
// its value compared here, then the record and the writes in MULTI/EXEC,
// which the server refuses (a nil EXEC) if the key changed meanwhile.
func watchWrite(ctx context.Context, client rueidis.Client, tag string, i int) error {
	lock := tag + ":lock"
	return client.Dedicated(func(c rueidis.DedicatedClient) error {
		b := c.B()
		res := c.DoMulti(ctx, b.Watch().Key(lock).Build(), b.Get().Key(lock).Build())
		if v, err := res[1].ToString(); err != nil || v != token {
			return fmt.Errorf("watch-multi-exec: the lease key reads %q, %v", v, err)
		}
		res = c.DoMulti(ctx, b.Multi().Build(),
			b.Set().Key(conn.GuardRecordKey(lock)).Value(writeID(i)).Px(10*time.Second).Build(),
			b.Hset().Key(tag+":state").FieldValue().FieldValue("step", strconv.Itoa(i)).Build(),
			b.Incrby().Key(tag+":count").Increment(1).Build(), b.Exec().Build())
		for _, r := range res {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	})
}
