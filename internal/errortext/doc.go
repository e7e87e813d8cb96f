// Package errortext holds the golden test of the error messages a user of
// lease, coordination and election meets: each one produced by a real call
// against a simulated server (or, for the rarest paths, built as the
// library builds it), printed in testdata/messages.golden, checked to read
// once — one package prefix, no phrase twice — and to match its sentinels
// with errors.Is and errors.As. A change of any message shows in the diff
// of the golden file. Regenerate it with
//
//	go test ./internal/errortext -update
package errortext
