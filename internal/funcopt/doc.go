// Package funcopt gathers functional options, the one convention for
// options across flatkit's packages that CONTRIBUTING.md describes. Each
// option is a func that sets a field of the call's configuration. It is a
// leaf: it imports nothing of flatkit's and any package may use it.
package funcopt
