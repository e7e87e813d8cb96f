package lease

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// Token is a lock owner token: an immutable byte string compared by its
// exact bytes. Tokens are comparable with == and usable as map keys; a token
// built from text equals the token built from that text's UTF-8 bytes. The
// zero value is the empty token, which every lock operation rejects with
// ErrEmptyToken. Tokens are secrets: fmt, String and slog show them
// redacted; Hex, Bytes and Text reveal them.
type Token struct {
	bytes string // exact bytes; a string keeps Token comparable and immutable
}

// TokenFromBytes returns a token holding a copy of b; later changes to b do
// not change the token. Any bytes are accepted (binary tokens are fine).
func TokenFromBytes(b []byte) Token { return Token{bytes: string(b)} }

// TokenFromString returns the token of s's bytes. It rejects a string that
// is not valid UTF-8 with ErrInvalidToken rather than changing any byte;
// use TokenFromBytes for binary tokens.
func TokenFromString(s string) (Token, error) {
	if !utf8.ValidString(s) {
		return Token{}, fmt.Errorf("%w: not valid UTF-8 (use TokenFromBytes for binary tokens)", ErrInvalidToken)
	}
	return Token{bytes: strings.Clone(s)}, nil
}

// TokenFromHex returns the token whose bytes Hex wrote (either case), or an
// error matching ErrInvalidToken when hex is not valid hexadecimal.
func TokenFromHex(text string) (Token, error) {
	raw, err := hex.DecodeString(text)
	if err != nil {
		return Token{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return Token{bytes: string(raw)}, nil
}

// NewToken returns a fresh random token: 128 bits from crypto/rand, written
// as 32 lowercase hexadecimal ASCII characters (so Text always succeeds).
// Managed acquisitions use it for every attempt. It panics only if the
// operating system's random source fails, as crypto/rand.Read does.
func NewToken() Token {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("lease: crypto/rand failed: " + err.Error())
	}
	return Token{bytes: hex.EncodeToString(raw[:])}
}

// Bytes returns a copy of the token's bytes (nil for the zero token).
func (t Token) Bytes() []byte {
	if t.bytes == "" {
		return nil
	}
	return []byte(t.bytes)
}

// Hex returns the token's bytes as lossless uppercase hexadecimal ("" for
// the zero token). It reveals the token: store it where secrets go, never
// in logs. For a NewToken this is the hex of its 32 ASCII characters, not
// the characters themselves.
func (t Token) Hex() string { return strings.ToUpper(hex.EncodeToString([]byte(t.bytes))) }

// String returns "<redacted token>" ("<empty token>" for the zero token):
// printing a token never reveals it. Use Hex, Bytes or Text to read it.
func (t Token) String() string { return t.LogValue().String() }

// Text returns the token as text, failing with ErrInvalidToken when its bytes
// are not valid UTF-8 (nothing is replaced).
func (t Token) Text() (string, error) {
	if !utf8.ValidString(t.bytes) {
		return "", ErrInvalidToken
	}
	return t.bytes, nil
}

// IsZero reports whether the token is empty (the zero value or zero bytes).
func (t Token) IsZero() bool { return t.bytes == "" }

// Len returns the number of bytes in the token.
func (t Token) Len() int { return len(t.bytes) }

// LogValue implements slog.LogValuer: it logs only whether a token is
// present, never its bytes or hex.
func (t Token) LogValue() slog.Value {
	if t.IsZero() {
		return slog.StringValue("<empty token>")
	}
	return slog.StringValue("<redacted token>")
}

// wire returns the exact bytes sent to the server.
func (t Token) wire() string { return t.bytes }
