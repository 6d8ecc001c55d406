package wrongcube_test

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/wrongcube"
)

// The gradient of Σ x³ is 3x²; a Cube whose VJP is scaled by 2 gives
// twice that, which a checker of gradients must notice.
func ExampleNew() {
	θ := []float32{1, 2}
	for _, c := range []*wrongcube.Cube{wrongcube.New(1, 1, 1), wrongcube.New(2, 1, 1)} {
		loss := func(x ad.Var) ad.Var { return ad.Sum(ad.Apply(c, ad.Attrs{}, x)) }
		v, g, err := ad.ValueAndGrad(loss, θ)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("VJP scaled by %g: value %g, gradient %v\n", c.VJPScale, v, g)
	}
	// Output:
	// VJP scaled by 1: value 9, gradient [3 12]
	// VJP scaled by 2: value 9, gradient [6 24]
}
