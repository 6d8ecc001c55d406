package flat

// The serial blocked product: per-goroutine workspaces, the macro-kernel
// loop over one block of C, and the packing of op(A) and op(B) into
// micro-panels.

import (
	"sync/atomic"

	"github.com/flatkit/flatkit/internal/freelist"
)

// gemmWorkspace holds one goroutine's packing buffers. They grow to the
// largest blocks seen and are then reused.
type gemmWorkspace struct {
	a, b []float32
	tile [16 * 32]float32 // an mr×nr tile of C at the edges (ldc = nr)
	// pending counts the jobs of this workspace owner's parallel call that
	// are not done. The owner waits by yielding, not with a WaitGroup: a
	// blocked goroutine takes a runtime sudog, and those caches, unbalanced
	// between processors, make the runtime allocate now and then.
	pending atomic.Int32
}

// grow returns buf with length n, reallocating only if its capacity is
// short: then to the largest length any workspace has asked of *high, so
// that each workspace grows at most once to the size a program's products
// settle at. Grown to each request's own n, the several workspaces (the
// calling goroutines', the workers') met their largest products in an
// order that depends on scheduling, and a step on two goroutines allocated
// now and then long after warm-up.
func grow(buf []float32, n int, high *atomic.Int64) []float32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	size := int64(n)
	for {
		h := high.Load()
		if h >= size {
			size = h
			break
		}
		if high.CompareAndSwap(h, size) {
			break
		}
	}
	return make([]float32, size)[:n]
}

// gemmHighA and gemmHighB are the largest packed-A and packed-B lengths
// requested of any workspace (grow).
var gemmHighA, gemmHighB atomic.Int64

// gemmFree is the free list of workspaces for calling goroutines. The
// garbage collector never empties it, so a steady state that never
// allocates stays that way. It holds at most one workspace per goroutine
// that was ever inside Gemm at the same time.
var gemmFree freelist.List[gemmWorkspace]

func getGemmWorkspace() *gemmWorkspace { return gemmFree.Get() }

func putGemmWorkspace(ws *gemmWorkspace) { gemmFree.Put(ws) }

// blockSize splits n into ceil(n/maxBlock) nearly equal blocks, each a
// multiple of unit (except where n ends), and returns the block length.
func blockSize(n, maxBlock, unit int) int {
	nb := (n + maxBlock - 1) / maxBlock
	bs := (n + nb - 1) / nb
	return (bs + unit - 1) / unit * unit
}

// gemmSerial computes C = alpha·op(A)·op(B) + beta·C on the calling
// goroutine with ws's buffers. alpha != 0 and m, n, k ≥ 1.
func gemmSerial(ker *gemmKernel, ws *gemmWorkspace, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	mr, nr := ker.mr, ker.nr
	kcMax := blockSize(k, ker.kc, 1)
	mcMax := blockSize(m, ker.mc, mr)
	ncMax := blockSize(n, ker.nc, nr)
	ws.a = grow(ws.a, mcMax*kcMax, &gemmHighA)
	ws.b = grow(ws.b, ncMax*kcMax, &gemmHighB)
	for jc := 0; jc < n; jc += ncMax {
		nc := min(ncMax, n-jc)
		for pc := 0; pc < k; pc += kcMax {
			kc := min(kcMax, k-pc)
			packB(ws.b, tB, b, ldb, pc, jc, kc, nc, nr)
			bet := beta
			if pc > 0 {
				bet = 1
			}
			for ic := 0; ic < m; ic += mcMax {
				mc := min(mcMax, m-ic)
				packA(ws.a, tA, a, lda, ic, pc, mc, kc, mr)
				gemmMacro(ker, ws, mc, nc, kc, alpha, bet, c[ic*ldc+jc:], ldc)
			}
		}
	}
}

// gemmMacro runs the micro-kernel over an mc×nc block of C from the packed
// panels in ws.
func gemmMacro(ker *gemmKernel, ws *gemmWorkspace, mc, nc, kc int, alpha, beta float32, c []float32, ldc int) {
	mr, nr := ker.mr, ker.nr
	fn := ker.fn
	pa, pb := ws.a, ws.b
	for jr := 0; jr < nc; jr += nr {
		bp := pb[jr*kc : (jr+nr)*kc]
		w := min(nr, nc-jr)
		for ir := 0; ir < mc; ir += mr {
			ap := pa[ir*kc : (ir+mr)*kc]
			h := min(mr, mc-ir)
			if h == mr && w == nr {
				fn(kc, ap, bp, c[ir*ldc+jr:], ldc, alpha, beta)
				continue
			}
			// An edge tile: run the same kernel on a full tile in ws.tile,
			// so the arithmetic is that of an inner tile, then copy out the
			// part inside C.
			tile := ws.tile[:mr*nr]
			if beta != 0 {
				for i := 0; i < h; i++ {
					copy(tile[i*nr:i*nr+w], c[(ir+i)*ldc+jr:])
				}
			}
			fn(kc, ap, bp, tile, nr, alpha, beta)
			for i := 0; i < h; i++ {
				copy(c[(ir+i)*ldc+jr:(ir+i)*ldc+jr+w], tile[i*nr:])
			}
		}
	}
}

// packA packs op(A)[i0:i0+mc, p0:p0+kc] into dst as mr-row micro-panels:
// panel q holds, for each p, op(A)[i0+q·mr+i, p0+p] at q·mr·kc + p·mr + i.
// Rows past mc are zero.
func packA(dst []float32, tA bool, a []float32, lda, i0, p0, mc, kc, mr int) {
	for q := 0; q*mr < mc; q++ {
		d := dst[q*mr*kc : (q+1)*mr*kc]
		h := min(mr, mc-q*mr)
		r0 := i0 + q*mr
		if tA {
			// op(A)[i, p] = a[p*lda+i]: each p is a contiguous run.
			packRuns(d, mr, a[p0*lda+r0:], lda, h, kc)
		} else {
			// op(A)[i, p] = a[i*lda+p]: each row i is a contiguous run in p.
			packInterleave(d, mr, a[r0*lda+p0:], lda, h, kc)
		}
	}
}

// packB packs op(B)[p0:p0+kc, j0:j0+nc] into dst as nr-column micro-panels:
// panel q holds, for each p, op(B)[p0+p, j0+q·nr+j] at q·nr·kc + p·nr + j.
// Columns past nc are zero.
//
// These are the row micro-panels of op(B)ᵀ[j0:j0+nc, p0:p0+kc], so packB is
// packA of the other transpose: op(B)ᵀ = B when tB (each row j of B is a
// contiguous run in p), Bᵀ when not (each p is a contiguous run in j).
func packB(dst []float32, tB bool, b []float32, ldb, p0, j0, kc, nc, nr int) {
	packA(dst, !tB, b, ldb, j0, p0, nc, kc, nr)
}

// packRuns sets d[p*width+j] = src[p*lds+j] for p < kc, j < w, and zero for
// w ≤ j < width: a micro-panel whose kc rows are runs in memory.
func packRuns(d []float32, width int, src []float32, lds, w, kc int) {
	copyRows(d, width, src, lds, w, kc)
}

// packInterleave sets d[p*width+j] = src[j*lds+p] for p < kc, j < w, and
// zero for w ≤ j < width: a micro-panel whose w columns are runs in memory,
// interleaved four at a time.
func packInterleave(d []float32, width int, src []float32, lds, w, kc int) {
	j := 0
	for ; j+4 <= w; j += 4 {
		transpose4(d[j:], width, src[j*lds:], lds, kc)
	}
	for ; j < w; j++ {
		s := src[j*lds:][:kc]
		for p, v := range s {
			d[p*width+j] = v
		}
	}
	if w < width {
		z := gemmZeros[:width-w]
		for p := 0; p < kc; p++ {
			copySmall(d[p*width+w:p*width+width], z)
		}
	}
}

// gemmZeros is a source of zeros for padding micro-panels (copySmall avoids
// a call into memclr for each short run).
var gemmZeros [32]float32

// copyRowsGo sets dst[p*width+j] = src[p*lds+j] for p < n, j < w, and zero
// for w ≤ j < width.
func copyRowsGo(dst []float32, width int, src []float32, lds, w, n int) {
	for p := 0; p < n; p++ {
		d := dst[p*width : p*width+width]
		copySmall(d[:w], src[p*lds:])
		clear(d[w:])
	}
}

// transpose4Go sets dst[p*ldd+r] = src[r*lds+p] for r < 4, p < n.
func transpose4Go(dst []float32, ldd int, src []float32, lds, n int) {
	s0, s1, s2, s3 := src[:n], src[lds:lds+n], src[2*lds:2*lds+n], src[3*lds:3*lds+n]
	for p := range s0 {
		dp := dst[p*ldd : p*ldd+4]
		dp[0], dp[1], dp[2], dp[3] = s0[p], s1[p], s2[p], s3[p]
	}
}

// copySmall copies src into dst (equal lengths, typically 4 to 32) without
// the call into memmove that copy makes.
func copySmall(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := src[i : i+4 : i+4]
		d[0], d[1], d[2], d[3] = s[0], s[1], s[2], s[3]
	}
	for ; i < len(dst); i++ {
		dst[i] = src[i]
	}
}
