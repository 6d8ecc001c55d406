package optimisers

// Compile-time checks, gonum style. Every rule implements Rule and the
// optional interfaces the optimiser finds by type assertion: Fused, Global,
// Gate, Observer, Leafwise and Validator. So a mistyped method is a build
// error, not a fast path or a check silently skipped.
var (
	_ Rule      = AccumGradRule{}
	_ Gate      = AccumGradRule{}
	_ Validator = AccumGradRule{}
	_ Rule      = AdaBeliefRule{}
	_ Fused     = AdaBeliefRule{}
	_ Validator = AdaBeliefRule{}
	_ Rule      = AdaDeltaRule{}
	_ Fused     = AdaDeltaRule{}
	_ Validator = AdaDeltaRule{}
	_ Rule      = AdaGradRule{}
	_ Fused     = AdaGradRule{}
	_ Validator = AdaGradRule{}
	_ Rule      = AdaMaxRule{}
	_ Fused     = AdaMaxRule{}
	_ Validator = AdaMaxRule{}
	_ Rule      = AdamRule{}
	_ Fused     = AdamRule{}
	_ Validator = AdamRule{}
	_ Rule      = AdamWRule{}
	_ Fused     = AdamWRule{}
	_ Validator = AdamWRule{}
	_ Rule      = ByPathRule{}
	_ Validator = ByPathRule{}
	_ Rule      = ChainRule{}
	_ Validator = ChainRule{}
	_ Rule      = ClipGlobalNormRule{}
	_ Global    = ClipGlobalNormRule{}
	_ Validator = ClipGlobalNormRule{}
	_ Rule      = ClipNormRule{}
	_ Leafwise  = ClipNormRule{}
	_ Validator = ClipNormRule{}
	_ Rule      = ClipValueRule{}
	_ Validator = ClipValueRule{}
	_ Rule      = DescentRule{}
	_ Fused     = DescentRule{}
	_ Validator = DescentRule{}
	_ Rule      = EMARule{}
	_ Observer  = EMARule{}
	_ Validator = EMARule{}
	_ Rule      = LionRule{}
	_ Fused     = LionRule{}
	_ Validator = LionRule{}
	_ Rule      = MomentumRule{}
	_ Fused     = MomentumRule{}
	_ Validator = MomentumRule{}
	_ Rule      = NAdamRule{}
	_ Fused     = NAdamRule{}
	_ Validator = NAdamRule{}
	_ Rule      = NesterovRule{}
	_ Fused     = NesterovRule{}
	_ Validator = NesterovRule{}
	_ Rule      = OAdamRule{}
	_ Fused     = OAdamRule{}
	_ Validator = OAdamRule{}
	_ Rule      = RAdamRule{}
	_ Fused     = RAdamRule{}
	_ Validator = RAdamRule{}
	_ Rule      = RMSPropRule{}
	_ Fused     = RMSPropRule{}
	_ Validator = RMSPropRule{}
	_ Rule      = RpropRule{}
	_ Fused     = RpropRule{}
	_ Validator = RpropRule{}
	_ Rule      = ScheduledRule{}
	_ Validator = ScheduledRule{}
	_ Rule      = SignDecayRule{}
	_ Validator = SignDecayRule{}
	_ Rule      = SkipNonFiniteRule{}
	_ Rule      = WeightDecayRule{}
	_ Validator = WeightDecayRule{}
)

// The schedules of this package also check their parameters (Setup finds
// scheduleChecker by type assertion).
var (
	_ checkedSchedule = constant{}
	_ checkedSchedule = cosine{}
	_ checkedSchedule = exponential{}
	_ checkedSchedule = joined{}
	_ checkedSchedule = linear{}
	_ checkedSchedule = stepDecay{}
	_ checkedSchedule = warmup{}
	_ checkedSchedule = warmupCosine{}
	_ Schedule        = ScheduleFunc(nil)
)

// checkedSchedule is a Schedule that checks its parameters.
type checkedSchedule interface {
	Schedule
	scheduleChecker
}
