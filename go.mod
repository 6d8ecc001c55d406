module github.com/flatkit/flatkit

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	golang.org/x/sys v0.50.0
	gonum.org/v1/gonum v0.17.0
	pgregory.net/rapid v1.3.0
)

require golang.org/x/tools v0.30.0 // indirect
