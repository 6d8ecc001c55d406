package ode

// Rodas5P is Steinebach's improved RODASP: an 8-stage, stiffly accurate,
// L-stable Rosenbrock–Wanner method of order 5. Its embedded method of
// order 4 gives the error estimate as its last stage. Its dense output of
// order 4 comes from the stages at no extra cost. It needs an exact
// Jacobian, from Problem.Jac, odead.Func or finite differences. Each step
// takes one Jacobian, one LU factorisation, 8 evaluations of F and 8
// solves, plus one evaluation for ∂F/∂t. It is the choice for stiff
// problems at moderate to tight tolerances; with a float64 state it
// reaches rtol 1e-10, as TestRodas5PRobertsonTight checks.
//
// G. Steinebach, "Construction of Rosenbrock–Wanner method Rodas5P and
// numerical benchmarks within the Julia Differential Equations package",
// BIT Numerical Mathematics 63, 27 (2023). The coefficients are those of
// the paper in the W-transformed form of OrdinaryDiffEq.jl's
// Rodas5PTableau. TestRosenbrockOrderConditions checks the order
// conditions up to order 5, and to 4 for the embedded method.
//
// Rodas5P returns Rodas5PMethod{}, the method with its default settings.
func Rodas5P() Method { return Rodas5PMethod{} }

// Rodas5PMethod is Rodas5P with its settings; the zero value is the
// default. A value is stateless and safe to share. The Jacobian and the
// solves with W follow Problem.JacStructure (see Structure): a band or
// sparse J costs a few evaluations of F (or JVPs) and a band or sparse LU
// per step, instead of n evaluations and a dense LU.
//
//	m := ode.Rodas5PMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
type Rodas5PMethod struct {
	// Linear is the linear solver for W = I − hγ·J. nil chooses from
	// Problem.JacStructure (see LinearSolver).
	Linear LinearSolver
}

var rodas5pTab = checkedTableau(rodas5pTableau())

func (Rodas5PMethod) Name() string { return "Rodas5P" }

func (m Rodas5PMethod) String() string { return withLinear("Rodas5P", m.Linear) }
func (Rodas5PMethod) info() methodInfo {
	return methodInfo{order: rodas5pTab.order, adaptive: true, stiff: true}
}

func rodas5pTableau() *rosTableau {
	const gamma = 0.21193756319429014
	// Stages 6, 7 and 8 are taken at t + h; the inputs of stages 7 and 8
	// are the previous stage's input plus its g, and u_new is stage 8's
	// input plus g_8, which is also the error estimate.
	a6 := []float64{-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256, 0.030198172008377946}
	a7 := append(append([]float64{}, a6...), 1)
	a8 := append(append([]float64{}, a7...), 1)
	m := append(append([]float64{}, a8...), 1)
	return &rosTableau{
		name: "Rodas5P", order: 5, embOrder: 4, interpOrder: 4,
		gamma: gamma,
		a: [][]float64{
			{},
			{3.0},
			{2.849394379747939, 0.45842242204463923},
			{-6.954028509809101, 2.489845061869568, -10.358996098473584},
			{2.8029986275628964, 0.5072464736228206, -0.3988312541770524, -0.04721187230404641},
			a6, a7, a8,
		},
		C: [][]float64{
			{},
			{-14.155112264123755},
			{-17.97296035885952, -2.859693295451294},
			{147.12150275711716, -1.41221402718213, 71.68940251302358},
			{165.43517024871676, -0.4592823456491126, 42.90938336958603, -5.961986721573306},
			{24.854864614690072, -3.0009227002832186, 47.4931110020768, 5.5814197821558125, -0.6610691825249471},
			{30.91273214028599, -3.1208243349937974, 77.79954646070892, 34.28646028294783, -19.097331116725623, -28.087943162872662},
			{37.80277123390563, -3.2571969029072276, 112.26918849496327, 66.9347231244047, -40.06618937091002, -54.66780262877968, -9.48861652309627},
		},
		c: []float64{0, 0.6358126895828704, 0.4095798393397535, 0.9769306725060716, 0.4288403609558664, 1, 1, 1},
		d: []float64{gamma, -0.42387512638858027, -0.3384627126235924, 1.8046452872882734, 2.325825639765069, 0, 0, 0},
		m: m,
		e: []float64{0, 0, 0, 0, 0, 0, 0, 1},
		h: [][]float64{
			{25.948786856663858, -2.5579724845846235, 10.433815404888879, -2.3679251022685204,
				0.524948541321073, 1.1241088310450404, 0.4272876194431874, -0.17202221070155493},
			{-9.91568850695171, -0.9689944594115154, 3.0438037242978453, -24.495224566215796,
				20.176138334709044, 15.98066361424651, -6.789040303419874, -6.710236069923372},
			{11.419903575922262, 2.8879645146136994, 72.92137995996029, 80.12511834622643,
				-52.072871366152654, -59.78993625266729, -0.15582684282751913, 4.883087185713722},
		},
	}
}
