package kinetics

import "github.com/flatkit/flatkit/ad"

// RobertsonNetwork is Robertson's kinetics as a network, with the rates
// p1, p2, p3 of Robertson:
//
//	y1 → y2            p1
//	y2 + y3 → y1 + y3  p2
//	2 y2 → y2 + y3     p3
var RobertsonNetwork = mustNetwork(3, []Reaction{
	{In: []int{0}, Out: []int{1}},
	{In: []int{1, 2}, Out: []int{0, 2}},
	{In: []int{1, 1}, Out: []int{1, 2}},
})

// PolluNetwork is POLLU's 25 reactions of its 20 species (0-based: the
// Test Set's y(i) is species i−1), with the rates k_1 … k_25 of
// stiffprob.PolluRates in this order.
var PolluNetwork = mustNetwork(20, []Reaction{
	{In: []int{0}, Out: []int{1, 2}},         // 1: NO2 → NO + O3P
	{In: []int{1, 3}, Out: []int{0}},         // 2
	{In: []int{4, 1}, Out: []int{0, 5}},      // 3
	{In: []int{6}, Out: []int{4, 4, 7}},      // 4
	{In: []int{6}, Out: []int{7}},            // 5
	{In: []int{6, 5}, Out: []int{4, 7}},      // 6
	{In: []int{8}, Out: []int{4, 7, 9}},      // 7
	{In: []int{8, 5}, Out: []int{10}},        // 8
	{In: []int{10, 1}, Out: []int{0, 9, 11}}, // 9
	{In: []int{10, 0}, Out: []int{12}},       // 10
	{In: []int{12}, Out: []int{0, 10}},       // 11
	{In: []int{9, 1}, Out: []int{0, 13}},     // 12
	{In: []int{13}, Out: []int{4, 6}},        // 13
	{In: []int{0, 5}, Out: []int{14}},        // 14
	{In: []int{2}, Out: []int{3}},            // 15
	{In: []int{3}, Out: []int{15}},           // 16
	{In: []int{3}, Out: []int{2}},            // 17
	{In: []int{15}, Out: []int{5, 5}},        // 18
	{In: []int{15}, Out: []int{2}},           // 19
	{In: []int{16, 5}, Out: []int{4, 17}},    // 20
	{In: []int{18}, Out: []int{1}},           // 21
	{In: []int{18}, Out: []int{0, 2}},        // 22
	{In: []int{0, 3}, Out: []int{18}},        // 23
	{In: []int{18, 0}, Out: []int{19}},       // 24
	{In: []int{19}, Out: []int{0, 18}},       // 25
})

// RobertsonAD is Robertson's right-hand side written with ad ops: u of
// shape [3], p the rates p1, p2, p3.
func RobertsonAD(u, p ad.Var, t float64) ad.Var { return RobertsonNetwork.RHS(u, p, t) }

// PolluAD is POLLU's right-hand side written with ad ops: u of shape
// [20], p the rates k_1 … k_25.
func PolluAD(u, p ad.Var, t float64) ad.Var { return PolluNetwork.RHS(u, p, t) }
