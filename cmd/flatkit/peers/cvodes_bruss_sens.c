/* SUNDIALS CVODES 6.4 peer of flatkit bench stiffsens (Debian libsundials-dev 6.4.1): the gradient of
 * a loss of the 1-D Brusselator by CVODES's adjoint and by its staggered forward sensitivities.
 *
 * Problem (Hairer-Wanner II, section IV.1), N grid points x_i = i/(N+1), 2N states interleaved
 * (u_i, v_i) as internal/stiffprob's Bruss1D, so the Jacobian is banded with bandwidths 2:
 *   u_i' = A + u_i^2 v_i - (B+1) u_i + c (u_{i-1} - 2 u_i + u_{i+1}),
 *   v_i' = B u_i - u_i^2 v_i + c (v_{i-1} - 2 v_i + v_{i+1}),   c = alpha (N+1)^2,
 * Dirichlet u = 1, v = 3 at both ends, u(x,0) = 1 + sin(2 pi x), v(x,0) = 3, t in [0, 10],
 * theta = (A, B, alpha) = (1, 3, 1/50). Loss G = 1/2 sum_i u_i(10)^2 (u components only).
 * The gradient is dG/dtheta (3 numbers) and dG/du0 (2N numbers).
 *
 * Methods, each BDF with Newton and a band LU with the exact Jacobian (CVodeSetJacFn):
 *   forward   the forward solve alone, for scale;
 *   adjoint   CVodeAdjInit (Hermite, -ncheck steps between checkpoints), backward problem
 *             lambda' = -J^T lambda, lambda(10) = dG/du(10), BDF with its own band LU and the exact
 *             -J^T (CVodeSetJacFnB); dG/dtheta by backward quadrature (CVodeQuadInitB, in the
 *             error test), dG/du0 = lambda(0). Covers the whole gradient.
 *   fsens     CVodeSensInit, CV_STAGGERED, analytic sensitivity right-hand side, sensitivities in
 *             the error test with CVODES's pbar scaling (pbar = |theta|): 3 sensitivity systems, so
 *             dG/dtheta only. With -u0sens also the 2N initial values (2N + 3 systems): the whole
 *             gradient.
 * Every method's memory is made once and re-initialised (CVodeReInit, CVodeSensReInit,
 * CVodeAdjReInit, CVodeReInitB, CVodeQuadReInitB) before each timed gradient, which allocates
 * nothing. One untimed gradient, then at least 3 and until 2 s or 21 have run (-reps sets a fixed
 * count); median, min and max wall time in ms.
 *
 * Output: one JSON line per method (scenario "stiffsens", "peer": true) with the time, G, the
 * gradient's norms and first components, the counters of the forward and backward solves.
 * -grad DIR writes the gradient of each method to DIR/<method>.txt, one number a line:
 * G, dG/dA, dG/dB, dG/dalpha, then dG/du0 (2N, absent for fsens without -u0sens).
 * -check prints G and the gradient by the adjoint at rtol 1e-10, atol 1e-14 instead (and with
 * -grad writes it to DIR/check.txt).
 *
 * Build: cc -O2 -o cvodes_bruss_sens cvodes_bruss_sens.c -lsundials_cvodes -lsundials_nvecserial \
 *          -lsundials_sunmatrixband -lsundials_sunlinsolband -lm
 * Usage: cvodes_bruss_sens [-n N] [-rtol R] [-atol A] [-ncheck K] [-reps K] [-u0sens] [-grad DIR]
 *          [-methods forward,adjoint,fsens] [-check]
 * Defaults: N = 500, rtol 1e-6, atol 1e-8, ncheck 100, all three methods. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_band.h>
#include <sunlinsol/sunlinsol_band.h>

static int N = 500;            /* grid points; 2N states */
static double TH[3] = {1, 3, 1.0 / 50}; /* A, B, alpha */
static const double T1 = 10;
static double RT = 1e-6, AT = 1e-8;
static int NCHECK = 100, REPS = 0, U0SENS = 0;
static const char *GRADDIR = NULL;

static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static void check(int flag, const char *what) { if (flag < 0) { fprintf(stderr, "cvodes_bruss_sens: %s failed: %d\n", what, flag); exit(1); } }

static double cc(void) { return TH[2] * (N + 1.0) * (N + 1.0); }

/* neighbours of grid point i in state vector y (Dirichlet values outside) */
#define NB(Y, i, ul, vl, ur, vr) double ul = (i) > 0 ? Y[2*(i)-2] : 1, vl = (i) > 0 ? Y[2*(i)-1] : 3, \
  ur = (i) < N-1 ? Y[2*(i)+2] : 1, vr = (i) < N-1 ? Y[2*(i)+3] : 3

static int f(realtype t, N_Vector y, N_Vector yd, void *ud) {
  double *Y = N_VGetArrayPointer(y), *D = N_VGetArrayPointer(yd), A = TH[0], B = TH[1], c = cc();
  (void)t; (void)ud;
  for (int i = 0; i < N; i++) {
    double u = Y[2*i], v = Y[2*i+1];
    NB(Y, i, ul, vl, ur, vr);
    D[2*i] = A + u*u*v - (B+1)*u + c*(ul - 2*u + ur);
    D[2*i+1] = B*u - u*u*v + c*(vl - 2*v + vr);
  }
  return 0;
}

/* J = df/dy in band storage; with sgn = -1 and trans, writes -J^T (the backward Jacobian). */
static void bandjac(N_Vector y, SUNMatrix J, double sgn, int trans) {
  double *Y = N_VGetArrayPointer(y), B = TH[1], c = cc();
  SUNMatZero(J);
#define SETJ(r, q, x) do { if (trans) SM_ELEMENT_B(J, q, r) = sgn*(x); else SM_ELEMENT_B(J, r, q) = sgn*(x); } while (0)
  for (int i = 0; i < N; i++) {
    double u = Y[2*i], v = Y[2*i+1]; int r = 2*i, s = 2*i+1;
    SETJ(r, r, 2*u*v - (B+1) - 2*c); SETJ(r, s, u*u); SETJ(s, r, B - 2*u*v); SETJ(s, s, -u*u - 2*c);
    if (i > 0) { SETJ(r, r-2, c); SETJ(s, s-2, c); }
    if (i < N-1) { SETJ(r, r+2, c); SETJ(s, s+2, c); }
  }
#undef SETJ
}
static int jac(realtype t, N_Vector y, N_Vector fy, SUNMatrix J, void *ud, N_Vector a, N_Vector b, N_Vector d) {
  (void)t; (void)fy; (void)ud; (void)a; (void)b; (void)d;
  bandjac(y, J, 1, 0);
  return 0;
}

/* out = J s + df/dtheta_k (k < 3; k = -1: no parameter term) */
static void jvp(const double *Y, const double *s, double *out, int k) {
  double A = TH[0], B = TH[1], c = cc(), c2 = (N + 1.0) * (N + 1.0);
  (void)A;
  for (int i = 0; i < N; i++) {
    double u = Y[2*i], v = Y[2*i+1], su = s[2*i], sv = s[2*i+1];
    double sul = i > 0 ? s[2*i-2] : 0, svl = i > 0 ? s[2*i-1] : 0, sur = i < N-1 ? s[2*i+2] : 0, svr = i < N-1 ? s[2*i+3] : 0;
    double du = (2*u*v - (B+1))*su + u*u*sv + c*(sul - 2*su + sur);
    double dv = (B - 2*u*v)*su - u*u*sv + c*(svl - 2*sv + svr);
    if (k == 0) du += 1;
    else if (k == 1) { du -= u; dv += u; }
    else if (k == 2) { NB(Y, i, ul, vl, ur, vr); du += c2*(ul - 2*u + ur); dv += c2*(vl - 2*v + vr); }
    out[2*i] = du; out[2*i+1] = dv;
  }
}
static int fS(int Ns, realtype t, N_Vector y, N_Vector yd, N_Vector *yS, N_Vector *ySd, void *ud, N_Vector t1, N_Vector t2) {
  double *Y = N_VGetArrayPointer(y);
  (void)t; (void)yd; (void)ud; (void)t1; (void)t2;
  for (int j = 0; j < Ns; j++) jvp(Y, N_VGetArrayPointer(yS[j]), N_VGetArrayPointer(ySd[j]), j < 3 ? j : -1);
  return 0;
}

/* Backward: lambda' = -J^T lambda; quadrature q' = -lambda^T df/dtheta, so q(0) = int_0^T lambda^T df/dtheta. */
static int fB(realtype t, N_Vector y, N_Vector yB, N_Vector yBd, void *ud) {
  double *Y = N_VGetArrayPointer(y), *l = N_VGetArrayPointer(yB), *o = N_VGetArrayPointer(yBd), B = TH[1], c = cc();
  (void)t; (void)ud;
  for (int i = 0; i < N; i++) {
    double u = Y[2*i], v = Y[2*i+1], lu = l[2*i], lv = l[2*i+1];
    double lul = i > 0 ? l[2*i-2] : 0, lvl = i > 0 ? l[2*i-1] : 0, lur = i < N-1 ? l[2*i+2] : 0, lvr = i < N-1 ? l[2*i+3] : 0;
    /* J^T lambda: column 2i of J against lambda */
    o[2*i] = -((2*u*v - (B+1) - 2*c)*lu + (B - 2*u*v)*lv + c*(lul + lur));
    o[2*i+1] = -(u*u*lu + (-u*u - 2*c)*lv + c*(lvl + lvr));
  }
  return 0;
}
static int jacB(realtype t, N_Vector y, N_Vector yB, N_Vector fyB, SUNMatrix JB, void *ud, N_Vector a, N_Vector b, N_Vector d) {
  (void)t; (void)yB; (void)fyB; (void)ud; (void)a; (void)b; (void)d;
  bandjac(y, JB, -1, 1);
  return 0;
}
static int fQB(realtype t, N_Vector y, N_Vector yB, N_Vector qBd, void *ud) {
  double *Y = N_VGetArrayPointer(y), *l = N_VGetArrayPointer(yB), *q = N_VGetArrayPointer(qBd), c2 = (N + 1.0) * (N + 1.0);
  double qa = 0, qb = 0, qal = 0;
  (void)t; (void)ud;
  for (int i = 0; i < N; i++) {
    double u = Y[2*i], v = Y[2*i+1], lu = l[2*i], lv = l[2*i+1];
    NB(Y, i, ul, vl, ur, vr);
    qa += lu;
    qb += u*(lv - lu);
    qal += c2*(lu*(ul - 2*u + ur) + lv*(vl - 2*v + vr));
  }
  q[0] = -qa; q[1] = -qb; q[2] = -qal;
  return 0;
}

static void init_y(N_Vector y) {
  double *Y = N_VGetArrayPointer(y);
  for (int i = 0; i < N; i++) { double x = (i + 1.0) / (N + 1); Y[2*i] = 1 + sin(2*M_PI*x); Y[2*i+1] = 3; }
}

enum { FORWARD, ADJOINT, FSENS };
static const char *mname[] = {"forward", "adjoint", "fsens"};

typedef struct {
  int kind, n, ns, which;
  SUNContext ctx;
  void *mem;
  N_Vector y, *yS, yB, qB;
  SUNMatrix A, AB;
  SUNLinearSolver L, LB;
  double rtol, atol;
  double *g; /* G, dG/dtheta (3), dG/du0 (n) */
  int ncheck;
  long fwd[6]; /* the forward solve's counters, read before the backward pass re-solves */
} Solver;

static void setup(Solver *s, int kind, double rtol, double atol) {
  memset(s, 0, sizeof *s);
  s->kind = kind; s->n = 2*N; s->rtol = rtol; s->atol = atol;
  s->g = calloc(4 + s->n, sizeof(double));
  check(SUNContext_Create(NULL, &s->ctx), "SUNContext_Create");
  s->y = N_VNew_Serial(s->n, s->ctx);
  init_y(s->y);
  s->mem = CVodeCreate(CV_BDF, s->ctx);
  check(CVodeInit(s->mem, f, 0.0, s->y), "CVodeInit");
  check(CVodeSStolerances(s->mem, rtol, atol), "CVodeSStolerances");
  CVodeSetMaxNumSteps(s->mem, 10000000);
  s->A = SUNBandMatrix(s->n, 2, 2, s->ctx);
  s->L = SUNLinSol_Band(s->y, s->A, s->ctx);
  check(CVodeSetLinearSolver(s->mem, s->L, s->A), "CVodeSetLinearSolver");
  check(CVodeSetJacFn(s->mem, jac), "CVodeSetJacFn");
  if (kind == FSENS) {
    s->ns = 3 + (U0SENS ? s->n : 0);
    s->yS = N_VCloneVectorArray(s->ns, s->y);
    for (int j = 0; j < s->ns; j++) N_VConst(0.0, s->yS[j]);
    for (int j = 3; j < s->ns; j++) N_VGetArrayPointer(s->yS[j])[j-3] = 1;
    check(CVodeSensInit(s->mem, s->ns, CV_STAGGERED, fS, s->yS), "CVodeSensInit");
    double *pbar = malloc(s->ns * sizeof(double));
    for (int j = 0; j < s->ns; j++) pbar[j] = j < 3 ? fabs(TH[j]) : 1;
    check(CVodeSetSensParams(s->mem, NULL, pbar, NULL), "CVodeSetSensParams");
    free(pbar); /* CVODES copies pbar */
    check(CVodeSensEEtolerances(s->mem), "CVodeSensEEtolerances");
    check(CVodeSetSensErrCon(s->mem, SUNTRUE), "CVodeSetSensErrCon");
  } else if (kind == ADJOINT) {
    s->ncheck = NCHECK;
    check(CVodeAdjInit(s->mem, NCHECK, CV_HERMITE), "CVodeAdjInit");
    s->yB = N_VNew_Serial(s->n, s->ctx);
    s->qB = N_VNew_Serial(3, s->ctx);
    s->which = -1;
  }
}

static void freesolver(Solver *s) {
  CVodeFree(&s->mem);
  SUNLinSolFree(s->L); SUNMatDestroy(s->A);
  if (s->LB) { SUNLinSolFree(s->LB); SUNMatDestroy(s->AB); }
  if (s->yS) N_VDestroyVectorArray(s->yS, s->ns);
  if (s->yB) { N_VDestroy(s->yB); N_VDestroy(s->qB); }
  N_VDestroy(s->y);
  free(s->g);
  SUNContext_Free(&s->ctx);
}

/* G of the state y at T1 */
static double loss(N_Vector y) {
  double *Y = N_VGetArrayPointer(y), G = 0;
  for (int i = 0; i < N; i++) G += Y[2*i]*Y[2*i];
  return G / 2;
}

/* the counters of mem: steps, f evaluations, Jacobians, LU setups, Newton iterations, error test failures */
static void getcounters(void *mem, long c[6]) {
  CVodeGetNumSteps(mem, &c[0]); CVodeGetNumRhsEvals(mem, &c[1]); CVodeGetNumJacEvals(mem, &c[2]);
  CVodeGetNumLinSolvSetups(mem, &c[3]); CVodeGetNumNonlinSolvIters(mem, &c[4]); CVodeGetNumErrTestFails(mem, &c[5]);
}
/* One gradient (or forward solve) into s->g. */
static void gradient(Solver *s, int first) {
  realtype tret;
  init_y(s->y);
  if (!first) check(CVodeReInit(s->mem, 0.0, s->y), "CVodeReInit");
  if (s->kind == FORWARD) {
    check(CVode(s->mem, T1, s->y, &tret, CV_NORMAL), "CVode");
    getcounters(s->mem, s->fwd);
    s->g[0] = loss(s->y);
    return;
  }
  if (s->kind == FSENS) {
    if (!first) {
      for (int j = 0; j < s->ns; j++) N_VConst(0.0, s->yS[j]);
      for (int j = 3; j < s->ns; j++) N_VGetArrayPointer(s->yS[j])[j-3] = 1;
      check(CVodeSensReInit(s->mem, CV_STAGGERED, s->yS), "CVodeSensReInit");
    }
    check(CVode(s->mem, T1, s->y, &tret, CV_NORMAL), "CVode");
    getcounters(s->mem, s->fwd);
    check(CVodeGetSens(s->mem, &tret, s->yS), "CVodeGetSens");
    double *Y = N_VGetArrayPointer(s->y);
    s->g[0] = loss(s->y);
    for (int j = 0; j < s->ns; j++) {
      double *sj = N_VGetArrayPointer(s->yS[j]), acc = 0;
      for (int i = 0; i < N; i++) acc += Y[2*i]*sj[2*i];
      s->g[1+j] = acc;
    }
    return;
  }
  int ncheck;
  if (!first) check(CVodeAdjReInit(s->mem), "CVodeAdjReInit");
  check(CVodeF(s->mem, T1, s->y, &tret, CV_NORMAL, &ncheck), "CVodeF");
  getcounters(s->mem, s->fwd);
  double *Y = N_VGetArrayPointer(s->y), *l = N_VGetArrayPointer(s->yB);
  s->g[0] = loss(s->y);
  for (int i = 0; i < N; i++) { l[2*i] = Y[2*i]; l[2*i+1] = 0; }
  N_VConst(0.0, s->qB);
  if (first) {
    check(CVodeCreateB(s->mem, CV_BDF, &s->which), "CVodeCreateB");
    check(CVodeInitB(s->mem, s->which, fB, T1, s->yB), "CVodeInitB");
    check(CVodeSStolerancesB(s->mem, s->which, s->rtol, s->atol), "CVodeSStolerancesB");
    CVodeSetMaxNumStepsB(s->mem, s->which, 10000000);
    s->AB = SUNBandMatrix(s->n, 2, 2, s->ctx);
    s->LB = SUNLinSol_Band(s->yB, s->AB, s->ctx);
    check(CVodeSetLinearSolverB(s->mem, s->which, s->LB, s->AB), "CVodeSetLinearSolverB");
    check(CVodeSetJacFnB(s->mem, s->which, jacB), "CVodeSetJacFnB");
    check(CVodeQuadInitB(s->mem, s->which, fQB, s->qB), "CVodeQuadInitB");
    check(CVodeQuadSStolerancesB(s->mem, s->which, s->rtol, s->atol), "CVodeQuadSStolerancesB");
    check(CVodeSetQuadErrConB(s->mem, s->which, SUNTRUE), "CVodeSetQuadErrConB");
  } else {
    check(CVodeReInitB(s->mem, s->which, T1, s->yB), "CVodeReInitB");
    check(CVodeQuadReInitB(s->mem, s->which, s->qB), "CVodeQuadReInitB");
  }
  check(CVodeB(s->mem, 0.0, CV_NORMAL), "CVodeB");
  check(CVodeGetB(s->mem, s->which, &tret, s->yB), "CVodeGetB");
  check(CVodeGetQuadB(s->mem, s->which, &tret, s->qB), "CVodeGetQuadB");
  for (int k = 0; k < 3; k++) s->g[1+k] = N_VGetArrayPointer(s->qB)[k];
  for (int i = 0; i < s->n; i++) s->g[4+i] = l[i];
}

/* number of gradient components s computes after G */
static int ncomp(const Solver *s) {
  if (s->kind == FORWARD) return 0;
  if (s->kind == FSENS) return s->ns;
  return 3 + s->n;
}

static void printcounters(const long c[6], const char *key) {
  printf(",\"%s\":{\"nsteps\":%ld,\"nfe\":%ld,\"nje\":%ld,\"nsetups\":%ld,\"nni\":%ld,\"netf\":%ld",
         key, c[0], c[1], c[2], c[3], c[4], c[5]);
}

static void writegrad(const Solver *s, const char *tag) {
  if (!GRADDIR) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.txt", GRADDIR, tag);
  FILE *fp = fopen(path, "w");
  if (!fp) { perror(path); exit(1); }
  for (int j = 0; j <= ncomp(s); j++) fprintf(fp, "%.17g\n", s->g[j]);
  fclose(fp);
}

/* the JSON fields of s's gradient: G, dG/dtheta, norms and first components of dG/du0 */
static void gradfields(const Solver *s) {
  printf(",\"G\":%.16g", s->g[0]);
  if (s->kind == FORWARD) return;
  printf(",\"dGdtheta\":[%.16g,%.16g,%.16g]", s->g[1], s->g[2], s->g[3]);
  int nu = ncomp(s) - 3;
  if (nu > 0) {
    double nrm = 0;
    for (int i = 0; i < nu; i++) nrm += s->g[4+i]*s->g[4+i];
    printf(",\"dGdu0_norm\":%.16g,\"dGdu0_first\":[", sqrt(nrm));
    for (int i = 0; i < 4 && i < nu; i++) printf("%s%.16g", i ? "," : "", s->g[4+i]);
    printf("]");
  }
}

static const char *covers(const Solver *s) {
  switch (s->kind) {
  case FORWARD: return "G only: the forward solve, for scale";
  case ADJOINT: return "dG/dtheta (backward quadrature) and dG/du0 (lambda(0))";
  default: return U0SENS ? "dG/dtheta and dG/du0 (3 + 2N sensitivity systems)" : "dG/dtheta only (3 sensitivity systems); dG/du0 needs -u0sens";
  }
}

static const char *about(int kind) {
  switch (kind) {
  case FORWARD: return "forward solve (BDF, band)";
  case ADJOINT: return "adjoint (BDF, band, Hermite checkpoints)";
  default: return U0SENS ? "forward sensitivities theta+u0 (BDF, band, staggered)" : "forward sensitivities theta (BDF, band, staggered)";
  }
}

static void bench(int kind) {
  Solver s;
  setup(&s, kind, RT, AT);
  gradient(&s, 1);
  double ts[64]; int reps = 0; double total = 0;
  while (reps < 64 && (REPS > 0 ? reps < REPS : (reps < 3 || (total < 2.0 && reps < 21)))) {
    double a = now();
    gradient(&s, 0);
    ts[reps] = now() - a; total += ts[reps]; reps++;
  }
  qsort(ts, reps, sizeof ts[0], cmpd);
  printf("{\"scenario\":\"stiffsens\",\"case\":\"bruss1d N=%d CVODES %s\",\"peer\":true,\"method\":\"%s\",\"n\":%d,\"states\":%d,"
         "\"rtol\":%g,\"atol\":%g,\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"unit\":\"ms\",\"reps\":%d,\"covers\":\"%s\"",
         N, about(kind), mname[kind], N, s.n, RT, AT, ts[reps/2]*1e3, ts[0]*1e3, ts[reps-1]*1e3, reps, covers(&s));
  if (kind == FSENS) printf(",\"sens_systems\":%d", s.ns);
  if (kind == ADJOINT) printf(",\"ncheck\":%d", s.ncheck);
  gradfields(&s);
  printcounters(s.fwd, "fwd");
  if (kind == FSENS) {
    long nfS = 0, nniS = 0, nsetS = 0, netfS = 0;
    CVodeGetSensNumRhsEvals(s.mem, &nfS); CVodeGetSensNumNonlinSolvIters(s.mem, &nniS);
    CVodeGetSensNumLinSolvSetups(s.mem, &nsetS); CVodeGetSensNumErrTestFails(s.mem, &netfS);
    printf(",\"nfS\":%ld,\"nniS\":%ld,\"nsetupsS\":%ld,\"netfS\":%ld", nfS, nniS, nsetS, netfS);
  }
  printf("}");
  if (kind == ADJOINT) {
    long c[6];
    getcounters(CVodeGetAdjCVodeBmem(s.mem, s.which), c);
    printcounters(c, "bwd");
    printf("}");
  }
  if (GRADDIR && kind != FORWARD) printf(",\"grad_file\":\"%s/%s.txt\"", GRADDIR, mname[kind]);
  printf("}\n");
  fflush(stdout);
  if (kind != FORWARD) writegrad(&s, mname[kind]);
  freesolver(&s);
}

int main(int argc, char **argv) {
  int want[3] = {1, 1, 1}, chk = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-n") && i+1 < argc) N = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-rtol") && i+1 < argc) RT = atof(argv[++i]);
    else if (!strcmp(argv[i], "-atol") && i+1 < argc) AT = atof(argv[++i]);
    else if (!strcmp(argv[i], "-ncheck") && i+1 < argc) NCHECK = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-reps") && i+1 < argc) REPS = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-grad") && i+1 < argc) GRADDIR = argv[++i];
    else if (!strcmp(argv[i], "-u0sens")) U0SENS = 1;
    else if (!strcmp(argv[i], "-check")) chk = 1;
    else if (!strcmp(argv[i], "-methods") && i+1 < argc) {
      const char *m = argv[++i];
      for (int k = 0; k < 3; k++) want[k] = strstr(m, mname[k]) != NULL;
    } else {
      fprintf(stderr, "usage: cvodes_bruss_sens [-n N] [-rtol R] [-atol A] [-ncheck K] [-reps K] [-u0sens] [-grad DIR] "
                      "[-methods forward,adjoint,fsens] [-check]\n");
      return 2;
    }
  }
  if (N < 1 || REPS > 64 || NCHECK < 1) { fprintf(stderr, "cvodes_bruss_sens: want N >= 1, reps <= 64, ncheck >= 1\n"); return 2; }
  if (chk) {
    Solver s;
    setup(&s, ADJOINT, 1e-10, 1e-14);
    gradient(&s, 1);
    printf("{\"scenario\":\"stiffsens\",\"case\":\"bruss1d N=%d CVODES check: adjoint at rtol 1e-10, atol 1e-14\",\"peer\":true,"
           "\"n\":%d,\"states\":%d,\"rtol\":1e-10,\"atol\":1e-14", N, N, s.n);
    gradfields(&s);
    if (GRADDIR) printf(",\"grad_file\":\"%s/check.txt\"", GRADDIR);
    printf("}\n");
    writegrad(&s, "check");
    freesolver(&s);
    return 0;
  }
  for (int k = 0; k < 3; k++) if (want[k]) bench(k);
  return 0;
}
