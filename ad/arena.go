package ad

// arena hands out slices from a list of blocks that Reset rewinds, so a tape
// that replays the same computation reuses the same memory and allocates
// nothing once warm. Blocks never move, so slices handed out stay valid until
// the arena is reset.
type arena[T any] struct {
	blocks [][]T
	bi     int // current block
	off    int // next free element in it
}

const minBlock = 1 << 12

// alloc returns n elements with unspecified contents.
func (a *arena[T]) alloc(n int) []T {
	for a.bi < len(a.blocks) {
		b := a.blocks[a.bi]
		if a.off+n <= len(b) {
			s := b[a.off : a.off+n : a.off+n]
			a.off += n
			return s
		}
		a.bi++
		a.off = 0
	}
	size := minBlock
	if k := len(a.blocks); k > 0 {
		size = 2 * len(a.blocks[k-1])
	}
	for size < n {
		size *= 2
	}
	a.blocks = append(a.blocks, make([]T, size))
	a.bi = len(a.blocks) - 1
	a.off = n
	return a.blocks[a.bi][:n:n]
}

// zeroed returns n zero elements.
func (a *arena[T]) zeroed(n int) []T {
	s := a.alloc(n)
	clear(s)
	return s
}

// copyOf returns a copy of s in the arena.
func (a *arena[T]) copyOf(s []T) []T {
	d := a.alloc(len(s))
	copy(d, s)
	return d
}

func (a *arena[T]) reset() { a.bi, a.off = 0, 0 }
