package lease

import (
	"github.com/respire-go/respire/internal/realserver"
)

// respConn is a minimal RESP2 connection (tests only).
type respConn = realserver.RespConn

func dialResp(addr, password string) (*respConn, error) { return realserver.Dial(addr, password) }
