package ad

// Compile-time checks, gonum style: every primitive of the package has the
// methods the tape finds by type assertion (JVPRule, VJPRule, and Aliaser
// for the ops that alias their input), so a mistyped rule is a build error
// rather than a rule silently skipped (a "no rule" error at run time).

// rulePrimitive is a primitive with both derivative rules.
type rulePrimitive interface {
	Primitive
	JVPRule
	VJPRule
}

// aliasPrimitive is a rulePrimitive whose output aliases its input.
type aliasPrimitive interface {
	rulePrimitive
	Aliaser
}

var (
	_ rulePrimitive  = (*binaryPrim)(nil)
	_ rulePrimitive  = (*bnBackDataPrim)(nil)
	_ rulePrimitive  = (*bnNormPrim)(nil)
	_ rulePrimitive  = (*bnStatsPrim)(nil)
	_ rulePrimitive  = (*bnSumsPrim)(nil)
	_ rulePrimitive  = (*broadcastToPrim)(nil)
	_ rulePrimitive  = (*channelAffinePrim)(nil)
	_ rulePrimitive  = (*concatAxisPrim)(nil)
	_ rulePrimitive  = (*concatPrim)(nil)
	_ rulePrimitive  = (*convBiasPrim)(nil)
	_ rulePrimitive  = (*convFPrim)(nil)
	_ rulePrimitive  = (*convPrim)(nil)
	_ rulePrimitive  = (*convTPrim)(nil)
	_ rulePrimitive  = (*cropPrim)(nil)
	_ rulePrimitive  = (*embedPrim)(nil)
	_ rulePrimitive  = (*extremumPrim)(nil)
	_ rulePrimitive  = (*gatherPrim)(nil)
	_ aliasPrimitive = (*identityPrim)(nil)
	_ rulePrimitive  = (*logSumExpPrim)(nil)
	_ rulePrimitive  = (*maskPositivePrim)(nil)
	_ rulePrimitive  = (*matmulPrim)(nil)
	_ rulePrimitive  = (*maxPoolPrim)(nil)
	_ rulePrimitive  = (*maxPoolScatterPrim)(nil)
	_ rulePrimitive  = (*meanPoolPrim)(nil)
	_ rulePrimitive  = (*negPrim)(nil)
	_ rulePrimitive  = (*padPrim)(nil)
	_ aliasPrimitive = (*reshapePrim)(nil)
	_ rulePrimitive  = (*scatterAddPrim)(nil)
	_ aliasPrimitive = (*stopGradientPrim)(nil)
	_ rulePrimitive  = (*sumToPrim)(nil)
	_ rulePrimitive  = (*transposePrim)(nil)
	_ rulePrimitive  = (*unaryAttrPrim)(nil)
	_ rulePrimitive  = (*unaryPrim)(nil)
	_ aliasPrimitive = (*viewPrim)(nil)
	_ rulePrimitive  = (*wherePrim)(nil)
)
