module github.com/respire-go/respire/bench

go 1.26.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/respire-go/respire v0.1.0
	github.com/respire-go/respire/rueidislease v0.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/looplab/fsm v1.0.3 // indirect
	github.com/respire-go/respire/goredis v0.1.0
	github.com/respire-go/respire/valkeygo v0.1.0
	github.com/valkey-io/valkey-go v1.0.80
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/respire-go/respire => ../

replace github.com/respire-go/respire/goredis => ../goredis

replace github.com/respire-go/respire/rueidislease => ../rueidislease

replace github.com/respire-go/respire/valkeygo => ../valkeygo
