// Package stfile loads the safetensors files of the tests of any package
// into a layout's buffer: the PyTorch fixtures in testdata, or the files a
// test writes. It imports layout, whose LoadInto reads from an io.Reader;
// a test gives a path.
package stfile
