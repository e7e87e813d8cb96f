package lease

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestTokenEqualityUsesExactBytes(t *testing.T) {
	fromText, err := TokenFromString("owner-42")
	if err != nil {
		t.Fatal(err)
	}
	if fromBytes := TokenFromBytes([]byte("owner-42")); fromText != fromBytes {
		t.Fatalf("text token %v != bytes token %v", fromText, fromBytes)
	}
	seen := map[Token]bool{fromText: true}
	if !seen[TokenFromBytes([]byte("owner-42"))] {
		t.Fatal("token is not usable as a map key by value")
	}
	if TokenFromBytes([]byte("a")) == TokenFromBytes([]byte("A")) {
		t.Fatal("different bytes compare equal")
	}
}

func TestTokenFromBytesCopies(t *testing.T) {
	buf := []byte{0x00, 0xff, 'x'}
	tok := TokenFromBytes(buf)
	buf[0] = 'z'
	if got := tok.Bytes(); !bytes.Equal(got, []byte{0x00, 0xff, 'x'}) {
		t.Fatalf("Bytes() = %x after caller mutation; want 00ff78", got)
	}
	out := tok.Bytes()
	out[1] = 0
	if tok.Hex() != "00FF78" {
		t.Fatalf("mutating Bytes() result changed the token: %s", tok.Hex())
	}
}

func TestTokenFromStringRejectsInvalidUTF8(t *testing.T) {
	if _, err := TokenFromString("ok\xffno"); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("TokenFromString(invalid) err = %v; want ErrInvalidToken", err)
	}
}

func TestTokenTextIsStrict(t *testing.T) {
	if _, err := TokenFromBytes([]byte{0xc3}).Text(); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Text() on invalid UTF-8 err = %v; want ErrInvalidToken", err)
	}
	if s, err := TokenFromBytes([]byte("héllo")).Text(); err != nil || s != "héllo" {
		t.Fatalf("Text() = %q, %v; want héllo", s, err)
	}
}

func TestTokenHexIsUppercaseHex(t *testing.T) {
	if got := TokenFromBytes([]byte("ab\x01")).Hex(); got != "616201" {
		t.Fatalf("Hex() = %q; want 616201", got)
	}
	if got := TokenFromBytes([]byte{0xab, 0xcd}).Hex(); got != "ABCD" {
		t.Fatalf("Hex() = %q; want ABCD", got)
	}
	if got := (Token{}).Hex(); got != "" {
		t.Fatalf("zero Hex() = %q; want empty", got)
	}
}

func TestZeroAndEmptyTokensAreEqualAndZero(t *testing.T) {
	if !(Token{}).IsZero() || !TokenFromBytes(nil).IsZero() || !TokenFromBytes([]byte{}).IsZero() {
		t.Fatal("empty tokens must report IsZero")
	}
	if (Token{}) != TokenFromBytes([]byte{}) {
		t.Fatal("zero token != empty token")
	}
	if (Token{}).Bytes() != nil {
		t.Fatal("zero token Bytes() should be nil")
	}
}

func TestNewTokenIsFresh128BitHex(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b {
		t.Fatal("two NewToken calls returned the same token")
	}
	text, err := a.Text()
	if err != nil || len(text) != 32 || strings.ToLower(text) != text {
		t.Fatalf("NewToken text = %q, %v; want 32 lowercase hex chars", text, err)
	}
}

func TestTokenLogValueRedacts(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	tok := TokenFromBytes([]byte("super-secret"))
	logger.Info("held", "token", tok)
	if strings.Contains(buf.String(), "super-secret") || strings.Contains(buf.String(), tok.Hex()) {
		t.Fatalf("log leaks the token: %s", buf.String())
	}
	if !strings.Contains(buf.String(), "redacted") {
		t.Fatalf("log does not mark the token redacted: %s", buf.String())
	}
}

func TestDurationsRoundUpToWholeMilliseconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int64
	}{
		{time.Nanosecond, 1},
		{999_999 * time.Nanosecond, 1},
		{time.Millisecond, 1},
		{1500 * time.Microsecond, 2},
		{30 * time.Second, 30000},
		{30*time.Second + time.Nanosecond, 30001},
		{MaxTTL, int64(MaxTTL / time.Millisecond)},
		{MaxTTL - time.Nanosecond, int64(MaxTTL / time.Millisecond)},
	}
	for _, tt := range tests {
		got, err := ttlMillis(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ttlMillis(%v) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	if d, _ := normalizeTTL(30*time.Second + time.Nanosecond); d != 30001*time.Millisecond {
		t.Errorf("normalizeTTL = %v; want 30.001s", d)
	}
}

func TestNonPositiveDurationsAreRejected(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Nanosecond, -time.Hour, MaxTTL + 1, time.Duration(1<<63 - 1)} {
		if _, err := ttlMillis(d); !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("ttlMillis(%v) err = %v; want ErrInvalidTTL", d, err)
		}
	}
}

func TestValidationHappensBeforeSending(t *testing.T) {
	tok := TokenFromBytes([]byte("t"))
	tests := []struct {
		name  string
		key   string
		token Token
		ttl   time.Duration
		want  error
	}{
		{"empty key", "", tok, time.Second, ErrEmptyKey},
		{"zero token", "k", Token{}, time.Second, ErrEmptyToken},
		{"empty token", "k", TokenFromBytes([]byte{}), time.Second, ErrEmptyToken},
		{"zero ttl", "k", tok, 0, ErrInvalidTTL},
		{"negative ttl", "k", tok, -time.Millisecond, ErrInvalidTTL},
	}
	for _, tt := range tests {
		if _, err := validate(tt.key, tt.token, tt.ttl, true); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v; want %v", tt.name, err, tt.want)
		}
	}
}

func TestNewRejectsNilClientAndBadOptions(t *testing.T) {
	if _, err := New(nil); !errors.Is(err, ErrNilClient) {
		t.Fatalf("New(nil) err = %v; want ErrNilClient", err)
	}
	var o options
	if err := WithCommandTimeout(-1)(&o); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("negative timeout err = %v; want ErrInvalidOption", err)
	}
}

func TestTokenSecret_NoFormatVerbRevealsIt(t *testing.T) {
	tok := TokenFromBytes([]byte("k-secret"))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		got := fmt.Sprintf(verb, tok)
		if strings.Contains(got, "k-secret") || strings.Contains(strings.ToUpper(got), tok.Hex()) {
			t.Fatalf("fmt %s of a token = %q: it reveals the token", verb, got)
		}
		if got != "<redacted token>" {
			t.Fatalf("fmt %s of a token = %q; want <redacted token>", verb, got)
		}
	}
	if got := fmt.Sprint(Token{}); got != "<empty token>" {
		t.Fatalf("zero token prints %q", got)
	}
}

func TestTokenHex_RoundTripsThroughTokenFromHex(t *testing.T) {
	for _, tok := range []Token{NewToken(), TokenFromBytes([]byte{0, 0xff, 'x'}), {}} {
		back, err := TokenFromHex(tok.Hex())
		if err != nil || back != tok {
			t.Fatalf("TokenFromHex(Hex()) = %v, %v; want the same token", back.Hex(), err)
		}
		lower, err := TokenFromHex(strings.ToLower(tok.Hex()))
		if err != nil || lower != tok {
			t.Fatalf("TokenFromHex(lowercase) = %v, %v", lower.Hex(), err)
		}
	}
	if _, err := TokenFromHex("zz"); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("TokenFromHex(zz) = %v; want ErrInvalidToken", err)
	}
}
