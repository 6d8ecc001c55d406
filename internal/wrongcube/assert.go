package wrongcube

import "github.com/flatkit/flatkit/ad"

// Compile-time checks: ad finds the rules by type assertion, so a mistyped
// JVP or VJP would silently leave a primitive without its rule.
var (
	_ ad.JVPRule = (*Cube)(nil)
	_ ad.VJPRule = (*Cube)(nil)
	_ ad.JVPRule = (*Square3)(nil)
	_ ad.VJPRule = (*Square3)(nil)
)
