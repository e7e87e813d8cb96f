package main

import (
	"errors"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// permissionCodes are the server error codes that refuse who we are
// (credentials) or what we may do (an ACL): exit 77, EX_NOPERM.
var permissionCodes = []string{"WRONGPASS", "NOAUTH", "NOPERM"}

// serverCode is the error code of the server reply err carries ("NOPERM",
// "WRONGPASS", ...), or "" when err is not a server reply.
func serverCode(err error) string {
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		code, _, _ := strings.Cut(re.Error(), " ")
		return code
	}
	var se *conn.ServerError // a reply to the locks' own client
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// refusesPermission reports whether err is the server refusing the
// credentials or a permission, however deep it is wrapped.
func refusesPermission(err error) bool {
	if errors.Is(err, lease.ErrFencingNotPermitted) {
		return true
	}
	return slices.Contains(permissionCodes, serverCode(err))
}

// serverStatus is the exit status of a command the server failed: 77 when
// it refused a permission or the credentials, 69 otherwise (unreachable,
// connection lost, or any other server error).
func serverStatus(err error) int {
	if refusesPermission(err) {
		return exitNoPerm
	}
	return exitUnavailable
}

// connectError is open's error when the client could not be made: 77 for
// refused credentials, a usage error for a database the server does not
// have (-n), 69 for everything else (the server cannot be reached).
func connectError(where string, err error) error {
	switch {
	case refusesPermission(err):
		return failf(exitNoPerm, "%s refused the credentials: %v", where, err)
	case serverCode(err) != "" && strings.Contains(err.Error(), "DB index"):
		return usagef("-n: %s: %v", where, err)
	}
	return failf(exitUnavailable, "cannot connect to %s: %v", where, err)
}
