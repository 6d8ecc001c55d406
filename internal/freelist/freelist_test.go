package freelist

import (
	"runtime"
	"sync"
	"testing"
)

func TestGetPutReuses(t *testing.T) {
	var l List[[]int]
	a := l.Get()
	*a = append(*a, 1, 2, 3)
	l.Put(a)
	if b := l.Get(); b != a || len(*b) != 3 {
		t.Fatalf("Get after Put returned %p (%v), want the item put %p", b, *b, a)
	}
	if c := l.Get(); c == a || c == nil {
		t.Fatal("Get on an empty list did not make a new item")
	}
}

func TestSurvivesGCAndSteadyStateAllocatesNothing(t *testing.T) {
	var l List[[]float32]
	x := l.Get()
	*x = make([]float32, 10)
	l.Put(x)
	runtime.GC()
	runtime.GC()
	if y := l.Get(); y != x {
		t.Fatal("the item did not survive two collections")
	} else {
		l.Put(y)
	}
	if n := testing.AllocsPerRun(100, func() { l.Put(l.Get()) }); n != 0 {
		t.Errorf("Get+Put allocates %g times, want 0", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	var l List[int]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				x := l.Get()
				*x = g*1000 + i
				if *x != g*1000+i {
					t.Error("item shared between goroutines")
				}
				l.Put(x)
			}
		}()
	}
	wg.Wait()
	if len(l.items) > 8 {
		t.Errorf("%d items, want at most 8 (one per goroutine that held one)", len(l.items))
	}
}

func TestSlicesGetSizesAndReuses(t *testing.T) {
	var s Slices[int]
	a := s.Get(5)
	if len(*a) != 5 {
		t.Fatalf("Get(5) has length %d, want 5", len(*a))
	}
	(*a)[4] = 7
	s.Put(a)
	b := s.Get(3)
	if b != a || len(*b) != 3 || cap(*b) < 5 {
		t.Fatalf("Get(3) after Put = %p len %d cap %d, want the item put (%p) resliced to 3", b, len(*b), cap(*b), a)
	}
	s.Put(b)
	c := s.Get(9)
	if len(*c) != 9 || cap(*c) < 9 {
		t.Fatalf("Get(9) has length %d cap %d, want length 9", len(*c), cap(*c))
	}
	s.Put(c)
	if n := testing.AllocsPerRun(100, func() { s.Put(s.Get(9)) }); n != 0 {
		t.Fatalf("a warm Get/Put of a Slices allocates %v times, want 0", n)
	}
}

// Two sizes out at once and put back long first: the next long Get finds
// the long buffer under the short one (it took the short one from the top
// and reallocated it, every round), and a short Get takes the shortest
// that fits, leaving the long one for a long request.
func TestSlicesGetPicksAFittingBuffer(t *testing.T) {
	var s Slices[float32]
	round := func() {
		long, short := s.Get(1000), s.Get(10)
		s.Put(long)
		s.Put(short)
	}
	round()
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Fatalf("a warm round of two sizes allocates %v times, want 0", n)
	}
	a, b := s.Get(5), s.Get(5)
	if cap(*a) != 10 || cap(*b) != 1000 {
		t.Errorf("two Get(5): capacities %d then %d, want 10 (the shortest that fits) then 1000", cap(*a), cap(*b))
	}
	s.Put(a)
	s.Put(b)
	c := s.Get(2000) // none fits: the longest is reallocated, the short one stays
	if len(*c) != 2000 {
		t.Fatalf("Get(2000) has length %d", len(*c))
	}
	if d := s.Get(10); cap(*d) != 10 {
		t.Errorf("Get(10) after the longest was taken: capacity %d, want the 10 left", cap(*d))
	}
}
