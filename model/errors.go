package model

import "strconv"

// pathError is a configuration error of the layer at a layout path inside
// containers ("1.0"), so the message names the layer the way the layout
// names its parameters: "model: 1.0: Conv: …", not "1: 0: Conv: …".
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

func (e *pathError) Unwrap() error { return e.err }

// atIndex places err at child index i of a container, joining the index
// onto the path of an error that already has one.
func atIndex(i int, err error) error {
	if pe, ok := err.(*pathError); ok {
		return &pathError{path: strconv.Itoa(i) + "." + pe.path, err: pe.err}
	}
	return &pathError{path: strconv.Itoa(i), err: err}
}
