module github.com/retailkit/retail

go 1.25.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/google/go-cmp v0.7.0
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
