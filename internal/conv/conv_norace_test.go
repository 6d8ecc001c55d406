//go:build !race

package conv

const convRace = false
