package odead

import "github.com/flatkit/flatkit/internal/pkgerr"

// errs makes the package's errors, prefixed "odead: " once
// (internal/pkgerr). It adopts ad's errors, so that a tape's error reads
// "odead: the ad right-hand side: Slice …", never "… ad: …".
var errs = pkgerr.Package{Prefix: "odead: ", Adopt: true}

// errorf is errs.Errorf: format has no prefix.
func errorf(format string, args ...any) error { return errs.Errorf(format, args...) }
