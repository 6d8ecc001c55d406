package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The CVODES peer of stiffsens, peers/cvodes_bruss_sens.c, compiled by
// the scenario when a C compiler and SUNDIALS's headers and libraries
// (Debian: libsundials-dev) are there; else its rows are one skipped line
// that says why.

//go:embed peers/cvodes_bruss_sens.c
var stiffSensPeerSource []byte

// stiffSensPeerLibs are the peer's libraries, as its header comment
// gives them.
var stiffSensPeerLibs = []string{"-lsundials_cvodes", "-lsundials_nvecserial", "-lsundials_sunmatrixband",
	"-lsundials_sunlinsolband", "-lm"}

// stiffSensPeer is the built peer.
type stiffSensPeer struct {
	dir string // a temporary directory: the source, the binary, the gradient files
	bin string
}

// buildStiffSensPeer compiles the peer into a new temporary directory.
// When it cannot, it returns nil and why; close the peer when done.
func buildStiffSensPeer(ctx context.Context) (*stiffSensPeer, string) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return nil, "no C compiler (cc) on PATH"
	}
	dir, err := os.MkdirTemp("", "flatkit-stiffsens-peer-")
	if err != nil {
		return nil, fmt.Sprintf("no temporary directory: %v", err)
	}
	src, bin := filepath.Join(dir, "cvodes_bruss_sens.c"), filepath.Join(dir, "cvodes_bruss_sens")
	if err := os.WriteFile(src, stiffSensPeerSource, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Sprintf("writing the source: %v", err)
	}
	args := append([]string{"-O2", "-o", bin, src}, stiffSensPeerLibs...)
	out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return nil, fmt.Sprintf("cc %s failed (%v: %s); the peer needs SUNDIALS 6 (Debian: apt-get install libsundials-dev)",
			strings.Join(args[3:], " "), err, first)
	}
	return &stiffSensPeer{dir: dir, bin: bin}, ""
}

func (p *stiffSensPeer) close() { os.RemoveAll(p.dir) }

// stiffSensPeerLine is a line of the peer with its gradient, read from
// its grad_file: G, dG/dθ, then dG/du0 when the method gives it.
type stiffSensPeerLine struct {
	fields map[string]any
	grad   []float64
}

// run runs the peer at N grid points with extra arguments and returns its
// lines in order.
func (p *stiffSensPeer) run(ctx context.Context, n int, extra ...string) ([]stiffSensPeerLine, error) {
	gdir, err := os.MkdirTemp(p.dir, "grad-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"-n", strconv.Itoa(n), "-grad", gdir}, extra...)
	cmd := exec.CommandContext(ctx, p.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("peer %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var lines []stiffSensPeerLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("peer line %q: %w", sc.Text(), err)
		}
		l := stiffSensPeerLine{fields: m}
		if f, ok := m["grad_file"].(string); ok {
			if l.grad, err = readNumbers(f); err != nil {
				return nil, fmt.Errorf("peer gradient: %w", err)
			}
			delete(m, "grad_file") // a temporary path
		}
		lines = append(lines, l)
	}
	return lines, sc.Err()
}

// readNumbers reads a file of numbers, one a line.
func readNumbers(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var xs []float64
	for _, f := range strings.Fields(string(b)) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		xs = append(xs, x)
	}
	return xs, nil
}
