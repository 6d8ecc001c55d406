package cpu

import "testing"

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{Generic: "go", AVX2: "avx2", AVX512: "avx512"} {
		if got := l.String(); got != want {
			t.Errorf("Level(%d).String() = %q, want %q", l, got, want)
		}
	}
	if !(Generic < AVX2 && AVX2 < AVX512) {
		t.Errorf("levels are not ordered Generic < AVX2 < AVX512: %d, %d, %d", Generic, AVX2, AVX512)
	}
}
