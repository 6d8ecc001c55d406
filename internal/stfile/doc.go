// Package stfile loads the safetensors files of the tests of any package
// (the PyTorch fixtures in testdata, the files a test writes) into a
// layout's buffer. It imports layout, whose LoadInto reads from an
// io.Reader; a test gives a path.
package stfile
