//go:build noasm || !amd64

package conv

const haveAVX512 = false

func accTapsAVX512(acc, src []float32, offs []int, ws []float32) { accTapsGo(acc, src, offs, ws) }

func dot8AVX512(s *[8]float32, a, b []float32, offs *[8]int) {
	for i := range s {
		s[i] = dotGo(a, b[offs[i]:offs[i]+len(a)])
	}
}
