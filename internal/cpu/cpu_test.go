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

// TestFeaturesLevel checks the rule on every combination of the four facts:
// a level is chosen exactly when all it needs is present.
func TestFeaturesLevel(t *testing.T) {
	for bits := 0; bits < 16; bits++ {
		f := Features{AVX: bits&1 != 0, AVX2: bits&2 != 0, FMA: bits&4 != 0, AVX512F: bits&8 != 0}
		want := Generic
		if f.AVX && f.AVX2 && f.FMA {
			want = AVX2
			if f.AVX512F {
				want = AVX512
			}
		}
		if got := f.Level(); got != want {
			t.Errorf("%+v.Level() = %v, want %v", f, got, want)
		}
	}
}

func TestBestIsTheRuleOfThisMachine(t *testing.T) {
	if got, want := Best, detected().Level(); got != want {
		t.Fatalf("Best = %v, want %v (the rule applied to %+v)", got, want, detected())
	}
	if Best != Generic && !HasAVX {
		t.Fatalf("Best = %v without AVX", Best)
	}
}
