package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress is a progress bar with the loss. On a terminal it redraws one
// line in place, at most ten times a second. On anything else, such as a
// file, a pipe or a test's buffer, it prints a plain line at every tenth
// of the run and at its end, so logs stay readable.
type progress struct {
	w            io.Writer
	name         string
	tty          bool
	from, to     int
	every        int
	start, drawn time.Time
	open         bool // a terminal line is drawn and not ended
	last, shown  int  // the last step reported, and the last one printed
	lastLoss     float64
}

// isTerminal reports whether w is a character device and TERM is not
// "dumb".
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newProgress starts a bar over the steps from+1 … to.
func newProgress(w io.Writer, name string, from, to int) *progress {
	return &progress{w: w, name: name, tty: isTerminal(w), from: from, to: to,
		every: max(1, (to-from)/10), start: time.Now()}
}

// update reports that step i is done with the given loss.
func (p *progress) update(i int, loss float64) {
	el := time.Since(p.start)
	p.last, p.lastLoss = i, loss
	if !p.tty {
		if (i-p.from)%p.every == 0 || i == p.to {
			p.line(i, loss, el)
		}
		return
	}
	if i != p.to && time.Since(p.drawn) < 100*time.Millisecond {
		return
	}
	p.drawn = time.Now()
	const width = 30
	frac := 1.0
	if p.to > 0 {
		frac = min(1, float64(i)/float64(p.to))
	}
	n := int(frac * width)
	eta := ""
	if done := i - p.from; done > 0 && i < p.to {
		eta = fmt.Sprintf("  eta %.0fs", el.Seconds()/float64(done)*float64(p.to-i))
	}
	fmt.Fprintf(p.w, "\r%-6s [%s%s] %5d/%d  loss %.6f  %5.1fs%s\x1b[K", p.name,
		strings.Repeat("=", n), strings.Repeat(" ", width-n), i, p.to, loss, el.Seconds(), eta)
	p.open = true
}

func (p *progress) line(i int, loss float64, el time.Duration) {
	fmt.Fprintf(p.w, "%-6s %5d/%d  loss %.6f  %6.1fs\n", p.name, i, p.to, loss, el.Seconds())
	p.shown = i
}

// done ends the bar's line on a terminal. Elsewhere it prints the last
// step if that was not printed yet, as after a run that ended early.
func (p *progress) done() {
	if !p.tty && p.last > p.shown {
		p.line(p.last, p.lastLoss, time.Since(p.start))
	}
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}
