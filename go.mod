module github.com/respire-go/respire

go 1.26.0

require (
	github.com/looplab/fsm v1.0.3
	github.com/redis/rueidis v1.0.79
	github.com/stretchr/testify v1.12.1
	github.com/yuin/gopher-lua v1.1.2
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.25.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
