// Package rules keeps docs/rules.md honest. It has no code of its own: its
// test parses docs/rules.md and every *_test.go file of the module and fails
// when a rule has no test, a listed test does not exist, a test named
// Test<RuleId>_<What> names a rule that is not there (or is not listed under
// it), or two rules share an id. The conventions are at the top of
// docs/rules.md.
package rules
