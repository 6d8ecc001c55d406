package conv

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 16 asks why ResNet-18 speeds up only 1.1-1.3× on two goroutines.
// TestResNetParallelism answers how much of the convolutions' arithmetic
// can run on two goroutines at all: for each convolution of the three
// bench shapes (cmd/flatkit/resnet.go: inference at 1×3×224² and
// 16×3×32², a training step at 16×3×96²) it logs the geometry, the path
// Paths names, the multiply-adds and the share of them that the path's
// split rule hands to a second goroutine, then the parallel fraction per
// shape. Run it with
//
//	go test ./internal/conv -run TestResNetParallelism -v
//
// The split rules are restated from the kernels (parallelShare); keep
// them in step. Amdahl's law bounds the two-goroutine speed-up of the
// convolutions by 1/(1 - f/2) for parallel fraction f.

// The thresholds of the splits, restated from the code: flat's
// gemmParallelMin (a product of fewer multiply-adds stays on one
// goroutine; from gemmPerThreadMin = 2^22 a product of 2^23 or more gets
// two), and forItems' and tapGemmFilter's 2^18 multiply-adds per unit.
const (
	gemmSplitMin = 1 << 23
	itemSplitMin = 1 << 18
)

// gemmShare returns the share of a product m×n×k that runs on two
// goroutines: all of it or none (flat.gemmThreads; a product of one tile
// row and column cannot split, which no layer here comes near).
func gemmShare(m, n, k int) float64 {
	if m*n*k >= gemmSplitMin {
		return 1
	}
	return 0
}

// itemsShare is forItems' rule: units independent units of work
// multiply-adds each split when there are two or more and each is worth a
// hand-off.
func itemsShare(units, work int) float64 {
	if units > 1 && work >= itemSplitMin {
		return 1
	}
	return 0
}

// pforCrit returns the largest share of flat.ParallelFor(units·itemScale,
// itemScale, …)'s range that one chunk gets on threads goroutines: its
// chunks are cut at k·n/p rounded down to a multiple of 16 (so 9 taps on
// two goroutines split 4 and 5).
func pforCrit(units, threads int) float64 {
	return pforCritN(units*itemScale, itemScale, threads)
}

// pforCritN is pforCrit for flat.ParallelFor(n, minChunk, …).
func pforCritN(n, minChunk, threads int) float64 {
	p := min(threads, n/minChunk)
	if p <= 1 {
		return 1
	}
	bound := func(k int) int {
		if k >= p {
			return n
		}
		return (k * n / p) &^ 15
	}
	most := 0
	for k := range p {
		most = max(most, bound(k+1)-bound(k))
	}
	return float64(most) / float64(n)
}

// parallelShare returns the share, in [0, 1], of op's multiply-adds on g
// that runs on two goroutines when path is the kernel Paths names for op
// ("forward", "data" or "filter"), the share of them the busiest goroutine
// computes (1 when serial; flat.Gemm's grids are taken as even, 1/threads),
// and whether the path is one it knows.
func parallelShare(g *Geom, op, path string, threads int) (share, crit float64, ok bool) {
	share, ok = parallelShareOf(g, op, path, threads)
	crit = 1 - share + share/float64(threads)
	cig, kv := g.CinG(), g.KVol()
	switch path + "/" + op {
	case "block/forward":
		chunks := 1
		if g.N < threads {
			chunks = max(1, min(g.Cout/8, (threads+g.N-1)/g.N))
		}
		if share == 1 {
			crit = pforCrit(g.N*chunks, threads)
		}
	case "block/data":
		if share == 1 {
			crit = pforCrit(g.N, threads)
		}
	case "smallgemm/forward":
		switch {
		case share == 1 && smallFwdByRows(g, len(tableFor(g).live)):
			crit = pforCritN(g.Cout, smallRowsChunk, threads)
		case share == 1:
			crit = pforCrit(g.N, threads)
		}
	case "cols/filter":
		if wd := phasedOf(g); share == 1 && colFilterSplits(g, &wd) {
			crit = pforCritN(g.CinG()*kv, 16, threads)
		}
	case "tapgemm/filter":
		wd, _ := wideOf(g)
		if kv > 1 && g.N*g.Cout*cig*wd.l >= itemSplitMin {
			crit = pforCrit(kv, threads)
		}
	}
	return share, crit, ok
}

// parallelShareOf is parallelShare's share: each path's split rule, from
// the kernel named in the comment.
func parallelShareOf(g *Geom, op, path string, threads int) (float64, bool) {
	cig, cog, kv, ov := g.CinG(), g.CoutG(), g.KVol(), g.OutVol()
	ck := cig * kv
	switch path + "/" + op {
	case "block/forward": // blockForward
		wd := phasedOf(g)
		chunks := 1
		if g.N < threads {
			chunks = max(1, min(g.Cout/8, (threads+g.N-1)/g.N))
		}
		return itemsShare(g.N*chunks, g.Cout*ck*wd.l/chunks), true
	case "block/data": // blockData: batch items only
		wd, _ := wideOf(g)
		return itemsShare(g.N, g.Cin*cog*kv*wd.plane), true
	case "pointwise/forward", "pointwise/data", "pointwise/filter":
		// One product per chunk of nb images side by side; the last chunk
		// may be narrower.
		nb := pointwiseChunk(g)
		var par, all float64
		for n0 := 0; n0 < g.N; n0 += nb {
			ld := min(nb, g.N-n0) * ov
			macs := float64(g.Cout * g.Cin * ld)
			all += macs
			par += macs * gemmShare(g.Cout, ld, g.Cin)
		}
		return par / all, true
	case "smallgemm/forward": // the channels split where they outnumber the columns (smallFwdByRows), else the batch (forItems); a product per share, over the live rows
		if smallFwdByRows(g, len(tableFor(g).live)) {
			return 1, true
		}
		return itemsShare(g.N, g.Cout*len(tableFor(g).live)*ov), true
	case "smallgemm/data", "smallgemm/filter":
		return gemmShare(g.Cout, g.N*ov, g.Cin*kv), true // one product for the batch
	case "cols/forward": // one product per image and group
		wd, _ := wideOf(g)
		return gemmShare(cog, wd.l, ck), true
	case "cols/data": // the batch split (forItems), one product per image and group over phase planes (colGemmData)
		wd := phasedOf(g)
		if g.N > 1 {
			return itemsShare(g.N, g.Cin*cog*kv*wd.l), true
		}
		return gemmShare(ck, wd.l, cog), true
	case "cols/filter": // dW's columns split (colFilterSplits), else one product per image and group over phase planes, on the caller for a batch (colGemmFilter)
		wd := phasedOf(g)
		if colFilterSplits(g, &wd) {
			return 1, true
		}
		if g.N > 1 {
			return 0, true
		}
		return gemmShare(cog, ck, wd.l), true
	case "tapgemm/forward", "tapgemm/data": // one product per image, group and tap
		wd, _ := wideOf(g)
		return gemmShare(cog, wd.l, cig), true
	case "tapgemm/filter": // the taps split (tapGemmFilter)
		wd, _ := wideOf(g)
		if kv > 1 && g.N*g.Cout*cig*wd.l >= itemSplitMin {
			return 1, true
		}
		return gemmShare(cog, cig, wd.l), true // one tap: the product alone
	case "im2col/forward", "im2col/data", "im2col/filter": // one product per image and group
		return gemmShare(cog, ov, ck), true
	case "small/forward", "small/data", "small/filter",
		"wide/forward", "wide/data", "wide/filter",
		"rows/forward", "rows/data", "rows/filter":
		return 0, true // the direct kernels have no split
	}
	return 0, false
}

func TestResNetParallelism(t *testing.T) {
	const threads = 2
	var summary strings.Builder
	for _, c := range []struct {
		name        string
		n, side     int
		train       bool
		convsPerNet int
	}{
		{"inference 1x3x224x224", 1, 224, false, 20},
		{"inference 16x3x32x32", 16, 32, false, 20},
		{"training step 16x3x96x96", 16, 96, true, 20},
	} {
		ops := []string{"forward"}
		if c.train {
			ops = append(ops, "data", "filter")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s, %d goroutines\n", c.name, threads)
		fmt.Fprintf(&b, "%-28s %3s %-28s %-8s %-10s %14s %6s %7s\n", "layer", "x", "geometry", "op", "path", "MACs/pass", "par", "busiest")
		var all, par, busy float64
		byOp := map[string][2]float64{}
		convs := 0
		for _, l := range resnet18Layers(c.n, c.side) {
			g := l.g
			convs += l.count
			f, d, fl := Paths(g)
			paths := map[string]string{"forward": f, "data": d, "filter": fl}
			geom := fmt.Sprintf("%d:%d->%d %dx%d k%d/%d", g.N, g.Cin, g.Cout, g.In[1], g.In[2], g.K[1], g.Stride[1])
			full := float64(l.count * g.N * g.Cout * g.CinG() * g.KVol() * g.OutVol())
			for _, op := range ops {
				macs := full
				if op == "forward" && paths[op] == "smallgemm" {
					// smallGemmForward multiplies the live im2col rows only
					macs = float64(l.count * g.N * g.Cout * len(tableFor(g).live) * g.OutVol())
				}
				if op == "data" && l.name == "conv1 7x7/2" {
					continue // the image is a constant: no data gradient
				}
				share, crit, ok := parallelShare(g, op, paths[op], threads)
				if !ok {
					t.Errorf("%s %s %s: path %q has no split rule in parallelShare", c.name, l.name, op, paths[op])
				}
				all += macs
				par += macs * share
				busy += macs * crit
				s := byOp[op]
				byOp[op] = [2]float64{s[0] + macs, s[1] + macs*share}
				fmt.Fprintf(&b, "%-28s %3d %-28s %-8s %-10s %14.0f %6.2f %7.3f\n", l.name, l.count, geom, op, paths[op], macs, share, crit)
			}
		}
		if convs != c.convsPerNet {
			t.Errorf("%s: the table has %d convolutions per pass, ResNet-18 has %d", c.name, convs, c.convsPerNet)
		}
		f := par / all
		fmt.Fprintf(&b, "parallel fraction %.3f of %.3g MACs; bound on %d goroutines %.2f× (Amdahl), %.2f× (with the splits' balance)", f, all, threads, 1/(1-f+f/threads), all/busy)
		for _, op := range ops {
			s := byOp[op]
			fmt.Fprintf(&b, "; %s %.3f", op, s[1]/s[0])
		}
		t.Log(b.String())
		fmt.Fprintf(&summary, "\n%-26s parallel fraction %.3f, speed-up bound %.2f×", c.name, f, all/busy)
		if busy < all/threads || busy > all {
			t.Errorf("%s: the busiest goroutine computes %.3g of %.3g MACs, outside [1/%d, 1]", c.name, busy, all, threads)
		}
	}
	t.Log("summary:" + summary.String())
}
