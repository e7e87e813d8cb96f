// Package installcheck holds the release check of respire-go's modules: its
// test publishes every module of the working tree at the release version
// (lease.Version) in a throw-away file module proxy and installs them, as a
// new user would, into a fresh module with an empty module cache: each
// install line of the README, then a build of every Go snippet of the
// README. See RELEASING.md. It has no code of its own.
package installcheck
