//go:build !race

package ad_test

const convRace = false
