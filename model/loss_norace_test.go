//go:build !race

package model_test

const lossRaceEnabled = false
