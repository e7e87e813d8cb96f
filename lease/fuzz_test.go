package lease

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/respire-go/respire/internal/respseeds"
)

// FuzzTokenParsing: a token read from text — hexadecimal (TokenFromHex,
// either case), UTF-8 (TokenFromString) or any bytes (TokenFromBytes) —
// round-trips exactly or fails with ErrInvalidToken, never prints its
// bytes, and yields an owner label only from a labelled owner value, never
// a byte of its secret. Seeds: the token and value texts of real server
// replies.
func FuzzTokenParsing(f *testing.F) {
	for _, w := range respseeds.All() {
		if _, text, _, ok := respseeds.Top(w); ok {
			f.Add(text)
		}
	}
	f.Add("0123456789abcdef0123456789abcdef\x00host-1 pid 42")
	f.Add("0123456789ABCDEF0123456789abcdef\x00job")
	f.Add("0123456789abcdef0123456789abcdef\x00a\nb")
	f.Fuzz(func(t *testing.T, text string) {
		if tok, err := TokenFromHex(text); err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("TokenFromHex(%q): %v does not match ErrInvalidToken", text, err)
			}
		} else if !strings.EqualFold(tok.Hex(), text) {
			t.Fatalf("TokenFromHex(%q).Hex() = %q", text, tok.Hex())
		}
		tok, err := TokenFromString(text)
		if (err == nil) != utf8.ValidString(text) || err != nil && !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("TokenFromString(%q): %v", text, err)
		}
		if err == nil {
			if got, err := tok.Text(); err != nil || got != text {
				t.Fatalf("TokenFromString(%q).Text() = %q, %v", text, got, err)
			}
		}
		raw := TokenFromBytes([]byte(text))
		if back, err := TokenFromHex(raw.Hex()); err != nil || back.wire() != text {
			t.Fatalf("TokenFromHex(Hex) of %q = %q, %v", text, back.wire(), err)
		}
		if s := raw.String(); s != "<redacted token>" && s != "<empty token>" {
			t.Fatalf("a token prints as %q", s)
		}
		if label, ok := raw.OwnerLabel(); ok {
			if len(text) < ownerSecretLen+2 || label != text[ownerSecretLen+1:] || checkOwnerLabel(label) != nil {
				t.Fatalf("OwnerLabel of %q = %q", text, label)
			}
		}
	})
}

// FuzzOwnerLabel: WithOwner's label is accepted exactly when it is valid
// UTF-8 of at most MaxOwnerLabel bytes without control characters (an
// error matching ErrInvalidOption otherwise), and an accepted label reads
// back whole from the labelled owner value, without the secret.
func FuzzOwnerLabel(f *testing.F) {
	for _, s := range []string{"host-1 pid 42", "job:42 ünïcode", "\x00", "a\nb", "\t", strings.Repeat("x", MaxOwnerLabel+1), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, label string) {
		err := checkOwnerLabel(label)
		valid := len(label) <= MaxOwnerLabel && utf8.ValidString(label) && !strings.ContainsFunc(label, isControl)
		if (err == nil) != valid || err != nil && !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("checkOwnerLabel(%q) = %v; valid %v", label, err, valid)
		}
		secret := NewToken().wire()
		got, ok := ownerLabelOf(secret + ownerSuffix(label))
		if want := valid && label != ""; ok != want || ok && got != label {
			t.Fatalf("ownerLabelOf(secret+%q) = %q, %v", label, got, ok)
		}
		if strings.Contains(got, secret) {
			t.Fatalf("the label %q holds the secret", got)
		}
		_ = WithOwner(label)
	})
}

// isControl is unicode.IsControl, as checkOwnerLabel applies it.
func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }
