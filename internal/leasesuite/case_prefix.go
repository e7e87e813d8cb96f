package leasesuite

import (
	"strings"
	"testing"
	"time"
)

// keyOf returns the key argument of a lock command.
func keyOf(args []string) string {
	switch strings.ToUpper(args[0]) {
	case "EVALSHA", "EVAL":
		return args[3]
	case "ASKING":
		return ""
	}
	return args[1]
}

func caseKeyPrefixAppliesToEveryKeyIncludingLuaKeys(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		srv := tg.srv
		root := tg.locks(t).WithKeyPrefix("tenant-a:")
		locks := root.WithKeyPrefix("jobs:")
		if got := locks.KeyPrefix(); got != "tenant-a:jobs:" {
			t.Fatalf("KeyPrefix() = %q; want tenant-a:jobs:", got)
		}
		ctx := ctxT(t)
		srv.ResetLog()
		steps := []func() error{
			func() error { _, err := locks.TryTake(ctx, "report", tok("me"), time.Minute); return err },
			func() error { _, err := locks.ResetExpiry(ctx, "report", tok("me"), time.Minute); return err },
			func() error { _, err := locks.ResetExpiry(ctx, "report", tok("me"), time.Minute); return err },
			func() error { _, _, err := locks.OwnerToken(ctx, "report"); return err },
			func() error { _, err := locks.Release(ctx, "report", tok("me")); return err },
			func() error { _, err := locks.Release(ctx, "report", tok("me")); return err },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		sent := lockArgs(srv.Log())
		if len(sent) < len(steps) {
			t.Fatalf("only %d lock commands sent", len(sent))
		}
		for _, args := range sent {
			if key := keyOf(args); key != "tenant-a:jobs:report" {
				t.Errorf("%s sent key %q; want tenant-a:jobs:report", args[0], key)
			}
		}
		if got := srv.Exec("EXISTS", "report"); got != ":0\r\n" {
			t.Fatalf("unprefixed key touched: EXISTS report = %q", got)
		}
	})
}

func init() {
	register(
		Case{"KeyPrefixAppliesToEveryKeyIncludingLuaKeys", caseKeyPrefixAppliesToEveryKeyIncludingLuaKeys},
	)
}
