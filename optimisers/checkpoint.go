package optimisers

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/flatkit/flatkit/layout"
)

// This file: checkpoints of an optimiser's state in the layout package's
// safetensors format.
//
// A checkpoint is a safetensors file written by layout.Save. Its layout has
// one group per state slot, "slot0", "slot1", …, each holding a copy of the
// parameters' storage leaves ("slot1.encoder.weight" is the second state
// vector of encoder.weight, with its shape), so that any safetensors reader
// can look at the moments by name; and one more F32 tensor, "optimiser",
// holding a JSON document one byte per float (every value an integer in
// [0, 255], exact in float32). The document carries everything else, with
// integers in decimal and floats as strconv's shortest round-trip strings,
// so nothing is rounded:
//
//	format     "flatkit.optimiser/1"
//	layout     the parameters' layout (layout's JSON form)
//	step, skipped, slots
//	groups     per rule (one, or one per PathRule): its pattern; its chain,
//	           each rule's type, non-hyperparameter fields and slots; the
//	           hyperparameter values of each variant Adjust made; and per
//	           leaf its path, whether it is trained, its variant and its
//	           count of updates per rule.

const (
	ckptFormat = "flatkit.optimiser/1"
	ckptMeta   = "optimiser"
)

// HoldsOptimiserState is what an optimiser checkpoint says it holds (the
// safetensors metadata "flatkit.holds"): layout.Load refuses it as
// parameters, naming both kinds.
const HoldsOptimiserState = "optimiser state"

type ckptDoc struct {
	Format  string          `json:"format"`
	Layout  json.RawMessage `json:"layout"`
	Step    int             `json:"step"`
	Skipped int             `json:"skipped"`
	Slots   int             `json:"slots"`
	Groups  []ckptGroup     `json:"groups"`
}

type ckptGroup struct {
	Pattern  string                `json:"pattern,omitempty"`
	Rules    []ckptRule            `json:"rules"`
	Variants [][]map[string]string `json:"variants"` // [variant][rule] name → value
	Members  []ckptMember          `json:"members"`
}

type ckptRule struct {
	Kind  string `json:"kind"`
	Slots int    `json:"slots"`
	// Given are the hyperparameters the rule was set up with (before any
	// Adjust), and Schedules the values of each schedule driving it at
	// sampled steps: Load compares both with its rule's. Absent in
	// checkpoints from before they were saved, which are not compared.
	Given     map[string]string `json:"given,omitempty"`
	Schedules []ckptSchedule    `json:"schedules,omitempty"`
}

// ckptSchedule is one schedule's fingerprint: what it drives, how it
// prints, and its values at ckptSampleSteps, exactly.
type ckptSchedule struct {
	Name   string   `json:"name"`
	Desc   string   `json:"desc"`
	Values []string `json:"values"`
}

// ckptSampleSteps are the steps at which schedules are compared. They are
// dense at the start, for warm-ups and peaks, then about three per decade
// up to 10⁷, for lengths.
var ckptSampleSteps = func() []int {
	var s []int
	for d := 1; d <= 10_000_000; d *= 10 {
		for _, m := range []int{1, 2, 3, 5, 7} {
			s = append(s, d*m)
		}
	}
	for k := 4; k <= 64; k++ {
		s = append(s, k)
	}
	slices.Sort(s)
	return slices.Compact(s)
}()

func fingerprint(name string, sc Schedule) ckptSchedule {
	f := ckptSchedule{Name: name, Desc: scheduleDesc(sc)}
	for _, k := range ckptSampleSteps {
		f.Values = append(f.Values, strconv.FormatFloat(sc.At(k), 'g', -1, 64))
	}
	return f
}

// scheduleDesc prints a schedule of this package with its fields, and any
// other by its type.
func scheduleDesc(sc Schedule) string {
	if _, ok := sc.(scheduleChecker); ok {
		return strings.TrimPrefix(fmt.Sprintf("%+v", sc), "optimisers.")
	}
	return fmt.Sprintf("%T", sc)
}

// given returns the fingerprints of the groups of p's rule as set up: per
// group, per chain rule, its hyperparameters and schedules.
func given(op string, p *plan) ([][]ckptRule, error) {
	fresh, err := setupPlan(op, p.rule, p.lay)
	if err != nil {
		return nil, err
	}
	return givenOf(fresh), nil
}

func givenOf(p *plan) [][]ckptRule {
	out := make([][]ckptRule, len(p.groups))
	for gi := range p.groups {
		gr := &p.groups[gi]
		for i, pr := range gr.prims {
			cr := ckptRule{Given: hyperValues(gr.variants[0][i].rule)}
			for _, e := range pr.sched {
				cr.Schedules = append(cr.Schedules, fingerprint(e.name, e.s))
			}
			out[gi] = append(out[gi], cr)
		}
	}
	return out
}

// adjustHint ends an error about a hyperparameter or a schedule that
// differs from the checkpoint's.
const adjustHint = "load with the rule as it was saved, then change it with Adjust (or give LoadCheckpoint a nil rule to load the parameters alone)"

// kindDiff names the first field that differs between two rule
// descriptions of describe, "T{A:x B:y}", or returns "" when their types
// differ or no field does.
func kindDiff(saved, here string) string {
	st, sf, _ := strings.Cut(saved, "{")
	ht, hf, _ := strings.Cut(here, "{")
	if st != ht {
		return ""
	}
	a, b := strings.Fields(strings.TrimSuffix(sf, "}")), strings.Fields(strings.TrimSuffix(hf, "}"))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			an, av, _ := strings.Cut(a[i], ":")
			_, bv, _ := strings.Cut(b[i], ":")
			return fmt.Sprintf("field %s is %s in the checkpoint, %s in the rule; it is not a hyperparameter, so Adjust cannot change it: set it as saved", an, av, bv)
		}
	}
	return ""
}

// givenDiff describes the first difference between the saved and the
// rule's hyperparameters and schedules of one chain rule, or returns "".
func givenDiff(saved, here ckptRule) string {
	if saved.Given == nil && saved.Schedules == nil {
		return "" // an older checkpoint
	}
	for _, name := range slices.Sorted(maps.Keys(saved.Given)) {
		if v, ok := here.Given[name]; ok && v != saved.Given[name] {
			return fmt.Sprintf("hyperparameter %s is %s in the checkpoint, %s in the rule; %s", name, saved.Given[name], v, adjustHint)
		}
	}
	if len(saved.Schedules) != len(here.Schedules) {
		return fmt.Sprintf("%d schedules in the checkpoint, %d in the rule", len(saved.Schedules), len(here.Schedules))
	}
	for k, a := range saved.Schedules {
		b := here.Schedules[k]
		if a.Name != b.Name {
			return fmt.Sprintf("schedule %d drives %s in the checkpoint, %s in the rule", k, a.Name, b.Name)
		}
		if len(a.Values) != len(ckptSampleSteps) {
			return fmt.Sprintf("the schedule of %s: the checkpoint is corrupt (%d sampled values, want %d)", a.Name, len(a.Values), len(ckptSampleSteps))
		}
		for j, v := range a.Values {
			if v != b.Values[j] {
				return fmt.Sprintf("the schedule of %s differs: at step %d it gives %s in the checkpoint (%s), %s in the rule (%s); %s",
					a.Name, ckptSampleSteps[j], v, a.Desc, b.Values[j], b.Desc, adjustHint)
			}
		}
	}
	return ""
}

type ckptMember struct {
	Leaf    string `json:"leaf"`
	On      bool   `json:"on"`
	Variant int    `json:"variant"`
	Counts  []int  `json:"counts"`
}

// describe names a rule by its type and the fields that are not
// hyperparameters (such as AMSGrad or AccumGrad's N), and the schedules
// that drive it.
func describe(r Rule, pr prim) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%T", r)
	rv := reflect.ValueOf(r)
	if rv.Kind() == reflect.Struct {
		sep := "{"
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Type().Field(i)
			if n, ok := hyperName(f); !f.IsExported() || ok && n != "" {
				continue
			}
			fmt.Fprintf(&sb, "%s%s:%v", sep, f.Name, rv.Field(i).Interface())
			sep = " "
		}
		if sep != "{" {
			sb.WriteString("}")
		}
	}
	for _, e := range pr.sched {
		fmt.Fprintf(&sb, " scheduled %s", e.name)
	}
	return sb.String()
}

// hyperValues returns r's hyperparameters as exact strings.
func hyperValues(r Rule) map[string]string {
	m := map[string]string{}
	for n, v := range namedHypers(r) {
		m[n] = strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return m
}

// Save writes the optimiser's state to w as a checkpoint (see Load).
func (o *Optimiser) Save(w io.Writer) error { return o.st.save(w, "Save", "") }

// SaveFile writes the optimiser's state to the file at path as Save does,
// atomically (layout.SaveFile).
func (o *Optimiser) SaveFile(path string) error { return o.st.save(nil, "SaveFile", path) }

// Save writes s to w as a checkpoint (see Load).
func (s State) Save(w io.Writer) error { return s.save(w, "Save", "") }

func (s State) save(w io.Writer, op, path string) error {
	if err := s.check(op); err != nil {
		return err
	}
	p := s.plan
	lay := p.lay
	layJSON, err := lay.MarshalJSON()
	if err != nil {
		return errorf("%s: %w", op, err)
	}
	doc := ckptDoc{Format: ckptFormat, Layout: layJSON, Step: s.Step, Skipped: s.Skipped, Slots: p.slots}
	giv, err := given(op, p)
	if err != nil {
		return err
	}
	for gi := range p.groups {
		gr := &p.groups[gi]
		cg := ckptGroup{Pattern: gr.pattern}
		for i, pr := range gr.prims {
			cr := giv[gi][i]
			cr.Kind, cr.Slots = describe(gr.variants[0][i].rule, pr), pr.slots
			cg.Rules = append(cg.Rules, cr)
		}
		for _, row := range gr.variants {
			vs := make([]map[string]string, len(row))
			for i, m := range row {
				vs[i] = hyperValues(m.rule)
			}
			cg.Variants = append(cg.Variants, vs)
		}
		for _, m := range gr.members {
			cg.Members = append(cg.Members, ckptMember{Leaf: lay.Leaf(m.leaf).Path, On: m.on, Variant: m.variant,
				Counts: slices.Clone(s.counts[m.c0 : m.c0+len(gr.prims)])})
		}
		doc.Groups = append(doc.Groups, cg)
	}
	meta, err := json.Marshal(doc)
	if err != nil {
		return errorf("%s: %w", op, err)
	}

	b := layout.NewBuilder()
	for k := range p.slots {
		g := b.Group("slot" + strconv.Itoa(k))
		for li := range lay.NumLeaves() {
			lf := lay.Leaf(li)
			g.Add(lf.Path, lf.Shape...)
		}
	}
	b.Add(ckptMeta, len(meta))
	clay, err := b.Build()
	if err != nil {
		return errorf("%s: laying out the checkpoint: %w", op, err)
	}
	n := lay.Len()
	data := make([]float32, clay.Len())
	for k := range p.slots {
		if err := slotOffsets(clay, lay, k); err != nil {
			return errorf("%s: %w", op, err)
		}
		copy(data[k*n:], s.Slots[k])
	}
	for i, c := range meta {
		data[p.slots*n+i] = float32(c)
	}
	return saveTo(w, path, op, clay, data, HoldsOptimiserState)
}

// saveTo writes data laid out by lay, marked as holding holds, to w with
// layout.Save, or to the file at path with layout.SaveFile if w is nil.
func saveTo(w io.Writer, path, op string, lay *layout.Layout, data []float32, holds string) error {
	var err error
	if w == nil {
		err = layout.SaveFile(path, lay, data, layout.Holds(holds))
	} else {
		err = layout.Save(w, lay, data, layout.Holds(holds))
	}
	if err != nil {
		return errorf("%s: %w", op, err)
	}
	return nil
}

// slotOffsets checks that the checkpoint layout holds slot k of every leaf
// of lay at k·Len + the leaf's offset.
func slotOffsets(clay, lay *layout.Layout, k int) error {
	for li := range lay.NumLeaves() {
		lf := lay.Leaf(li)
		name := "slot" + strconv.Itoa(k) + "." + lf.Path
		cl, ok := clay.Find(name)
		if !ok {
			return fmt.Errorf("the checkpoint has no tensor %q", name)
		}
		if cl.Offset != k*lay.Len()+lf.Offset || !slices.Equal(cl.Shape, lf.Shape) {
			return fmt.Errorf("tensor %q is at %d with shape %v, want %d with shape %v", name, cl.Offset, cl.Shape, k*lay.Len()+lf.Offset, lf.Shape)
		}
	}
	return nil
}

// Load reads a checkpoint written by Save and returns an optimiser that
// continues exactly where the saved one was. It restores the state vectors,
// the step and skip counters, the per-leaf counts and the frozen leaves. It
// also restores the hyperparameter values Adjust had set; these win over
// rule's.
//
// rule and lay must be those the saved optimiser was set up with. That
// means the same rule types in the same chains and ByPath assignment, and
// the same fields that are not hyperparameters, such as AMSGrad or
// AccumGrad's N. The hyperparameters as set up, before Adjust, must be the
// same. The schedules must drive the same names and give the same values;
// Load compares them at steps from 1 to 10⁷, so a schedule of another
// length or peak is caught. The layout must have the same leaves. Workers
// are not saved: the optimiser starts with 1.
//
// Errors name what differs or what is wrong with the file: a truncated or
// corrupt file, a file that is not an optimiser checkpoint, another layout,
// another rule, another hyperparameter or schedule.
func Load(r io.Reader, rule Rule, lay *layout.Layout) (*Optimiser, error) {
	θ, clay, err := layout.Load(r, layout.WantHolds(HoldsOptimiserState))
	if err != nil {
		return nil, errorf("Load: %w", err)
	}
	return load("Load", θ, clay, rule, lay)
}

// LoadFile is Load of the file at path.
func LoadFile(path string, rule Rule, lay *layout.Layout) (*Optimiser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errorf("LoadFile: %w", err)
	}
	defer f.Close()
	θ, clay, err := layout.Load(f, layout.WantHolds(HoldsOptimiserState))
	if err != nil {
		return nil, errorf("LoadFile: %s: %w", path, err)
	}
	return load("LoadFile "+path, θ, clay, rule, lay)
}

func load(op string, data []float32, clay *layout.Layout, rule Rule, lay *layout.Layout) (*Optimiser, error) {
	fail := func(format string, args ...any) (*Optimiser, error) {
		return nil, errorf(op+": "+format, args...)
	}
	if lay == nil {
		return fail("nil layout")
	}
	ml, ok := clay.Find(ckptMeta)
	if !ok {
		return fail("the file holds %s (no tensor %q), want %s", layout.HoldsParameters, ckptMeta, HoldsOptimiserState)
	}
	raw := make([]byte, ml.Size())
	for i, x := range data[ml.Offset:ml.End()] {
		if x != float32(byte(x)) {
			return fail("the checkpoint is corrupt: byte %d of tensor %q is %v, want an integer 0…255", i, ckptMeta, x)
		}
		raw[i] = byte(x)
	}
	var doc ckptDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fail("the checkpoint is corrupt: tensor %q: %v", ckptMeta, err)
	}
	if doc.Format != ckptFormat {
		return fail("the checkpoint's format is %q, want %q", doc.Format, ckptFormat)
	}
	saved, err := layout.ParseJSON(doc.Layout)
	if err != nil {
		return fail("the checkpoint's layout: %v", err)
	}
	if d := layoutDiff(lay, saved); d != "" {
		return fail("the checkpoint is for another layout: %s", d)
	}
	p, err := setupPlan(op, rule, lay)
	if err != nil {
		return nil, err
	}
	if len(doc.Groups) != len(p.groups) {
		return fail("the checkpoint has %d rules (one per ByPath pattern), the rule has %d", len(doc.Groups), len(p.groups))
	}
	if doc.Step < 0 || doc.Skipped < 0 {
		return fail("the checkpoint is corrupt: step %d, skipped %d, want both ≥ 0", doc.Step, doc.Skipped)
	}
	st := freshState(p)
	st.Step, st.Skipped = doc.Step, doc.Skipped
	giv := givenOf(p)
	for gi := range p.groups {
		gr := &p.groups[gi]
		cg := doc.Groups[gi]
		where := fmt.Sprintf("rule %d", gi)
		if gr.pattern != "" || cg.Pattern != "" {
			where = fmt.Sprintf("PathRule %d", gi)
			if gr.pattern != cg.Pattern {
				return fail("%s: the checkpoint's pattern is %q, the rule's %q", where, cg.Pattern, gr.pattern)
			}
		}
		if len(cg.Rules) != len(gr.prims) {
			return fail("%s: the checkpoint's chain has %d rules, the rule's %d", where, len(cg.Rules), len(gr.prims))
		}
		for i, pr := range gr.prims {
			if d := describe(gr.variants[0][i].rule, pr); cg.Rules[i].Kind != d || cg.Rules[i].Slots != pr.slots {
				msg := fmt.Sprintf("%s, chain rule %d: the checkpoint has %s (%d slots), the rule is %s (%d slots)", where, i, cg.Rules[i].Kind, cg.Rules[i].Slots, d, pr.slots)
				if fd := kindDiff(cg.Rules[i].Kind, d); fd != "" {
					msg += ": " + fd
				}
				return fail("%s", msg)
			}
			if d := givenDiff(cg.Rules[i], giv[gi][i]); d != "" {
				return fail("%s, chain rule %d (%s): %s", where, i, cg.Rules[i].Kind, d)
			}
		}
		if len(cg.Variants) == 0 {
			return fail("%s: the checkpoint is corrupt: no hyperparameters", where)
		}
		var variants [][]impl
		for v, vals := range cg.Variants {
			if len(vals) != len(gr.prims) {
				return fail("%s: the checkpoint is corrupt: variant %d has %d rules, want %d", where, v, len(vals), len(gr.prims))
			}
			row := slices.Clone(gr.variants[0])
			for i, kv := range vals {
				r := row[i].rule
				for _, name := range slices.Sorted(maps.Keys(kv)) {
					x, err := strconv.ParseFloat(kv[name], 64)
					if err != nil {
						return fail("%s: the checkpoint is corrupt: %s = %q, want a number", where, name, kv[name])
					}
					var n int
					if r, n = withHyper(r, name, x); n == 0 {
						return fail("%s, chain rule %d: the checkpoint sets %q, which %T does not have", where, i, name, r)
					}
				}
				if err := validate(r); err != nil {
					return fail("%s: the checkpoint's hyperparameters: %v", where, err)
				}
				row[i] = implOf(r)
			}
			variants = append(variants, row)
		}
		gr.variants = variants
		if len(cg.Members) != len(gr.members) {
			return fail("%s trains %d leaves in the checkpoint, %d with this rule and layout", where, len(cg.Members), len(gr.members))
		}
		for mi := range gr.members {
			m := &gr.members[mi]
			cm := cg.Members[mi]
			if path := lay.Leaf(m.leaf).Path; cm.Leaf != path {
				return fail("%s: leaf %d is %q in the checkpoint, %q with this rule and layout", where, mi, cm.Leaf, path)
			}
			if cm.Variant < 0 || cm.Variant >= len(variants) || len(cm.Counts) != len(gr.prims) {
				return fail("%s: the checkpoint is corrupt: leaf %q has variant %d of %d and %d counts for %d rules, want a variant in [0, %d) and one count per rule", where, cm.Leaf, cm.Variant, len(variants), len(cm.Counts), len(gr.prims), len(variants))
			}
			for _, c := range cm.Counts {
				if c < 0 {
					return fail("%s: the checkpoint is corrupt: leaf %q has a count of %d, want ≥ 0", where, cm.Leaf, c)
				}
			}
			m.on, m.variant = cm.On, cm.Variant
			copy(st.counts[m.c0:], cm.Counts)
		}
	}
	if doc.Slots != p.slots {
		return fail("the checkpoint has %d state slots, the rule needs %d", doc.Slots, p.slots)
	}
	p.size()
	n := lay.Len()
	for k := range p.slots {
		if err := slotOffsets(clay, lay, k); err != nil {
			return fail("%v", err)
		}
		copy(st.Slots[k], data[k*n:(k+1)*n])
	}
	return newOptimiser(st, 1), nil
}

// layoutDiff describes the first difference between the storage leaves of
// lay and those of the checkpoint's layout, or returns "".
func layoutDiff(lay, saved *layout.Layout) string {
	for i := range min(lay.NumLeaves(), saved.NumLeaves()) {
		a, b := lay.Leaf(i), saved.Leaf(i)
		switch {
		case a.Path != b.Path:
			return fmt.Sprintf("leaf %d is %q here, %q in the checkpoint", i, a.Path, b.Path)
		case !slices.Equal(a.Shape, b.Shape):
			return fmt.Sprintf("leaf %q has shape %v here, %v in the checkpoint", a.Path, a.Shape, b.Shape)
		}
	}
	if lay.NumLeaves() != saved.NumLeaves() {
		return fmt.Sprintf("%d leaves here, %d in the checkpoint", lay.NumLeaves(), saved.NumLeaves())
	}
	if err := lay.Compatible(saved); err != nil {
		return err.Error()
	}
	return ""
}
