module github.com/retailkit/retail

go 1.25

require github.com/google/go-cmp v0.7.0
