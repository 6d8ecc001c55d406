/* KLU on the 2-D Brusselator's W = I - c*J, the yardstick for SparseLU's benchmarks
 * (BenchmarkSparseLUBrusselator: same matrix, same c, same initial state).
 * Not built by go. Build and run:
 *   apt-get install -y libsuitesparse-dev
 *   gcc -O2 -I/usr/include/suitesparse -o /tmp/klu_bruss2d klu_bruss2d.c -lklu -lm && /tmp/klu_bruss2d
 * The CSR arrays of W are given to KLU as the CSC arrays of W^T, as SUNDIALS does for CSR
 * matrices; times are the median CPU time of repetitions, in ms. Orderings: 0 AMD, 1 COLAMD (SUNDIALS' default). */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
#include <klu.h>

/* CPU time of the process, as the Go benchmarks' cpu-ns/op: less disturbed by a loaded machine */
static double now(void) { struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static int cmpi(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int ix(int i, int j, int k, int N) { return (i + N) % N + ((j + N) % N) * N + k * N * N; }

static double median(double *t, int n) { qsort(t, n, sizeof *t, cmpd); return t[n / 2]; }

static void run(int N, int ordering, double c) {
  int n = 2 * N * N, nnz = 6 * n;
  int *Ap = malloc((n + 1) * sizeof(int)), *Ai = malloc(nnz * sizeof(int));
  double *Ax = malloc(nnz * sizeof(double)), *b = malloc(n * sizeof(double));
  double A = 3.4, dx = 1.0 / (N - 1), al = 10 / (dx * dx);
  int e = 0; Ap[0] = 0;
  for (int r = 0; r < n; r++) {
    int k = r / (N * N), rem = r % (N * N), i = rem % N, j = rem / N;
    double x = i * dx, y = j * dx, u = 22 * pow(y * (1 - y), 1.5), v = 27 * pow(x * (1 - x), 1.5);
    int cols[6] = {ix(i - 1, j, k, N), ix(i + 1, j, k, N), ix(i, j - 1, k, N), ix(i, j + 1, k, N), ix(i, j, 0, N), ix(i, j, 1, N)};
    qsort(cols, 6, sizeof(int), cmpi);
    for (int q = 0; q < 6; q++) {
      int cc = cols[q]; double jv;
      if (cc == r && k == 0) jv = -4 * al + 2 * u * v - (A + 1);
      else if (cc == r) jv = -4 * al - u * u;
      else if (cc == rem + N * N && k == 0) jv = u * u;
      else if (cc == rem && k == 1) jv = A - 2 * u * v;
      else jv = al;
      Ai[e] = cc; Ax[e] = (cc == r ? 1.0 : 0.0) - c * jv; e++;
    }
    Ap[r + 1] = e;
  }
  klu_common com; klu_defaults(&com); com.ordering = ordering;
  enum { R = 21 }; double ta[R], tf[R], tr[R], ts[R];
  klu_symbolic *S = NULL; klu_numeric *F = NULL;
  for (int rep = 0; rep < R; rep++) {
    if (S) klu_free_symbolic(&S, &com);
    double t0 = now(); S = klu_analyze(n, Ap, Ai, &com); ta[rep] = now() - t0;
  }
  for (int rep = 0; rep < R; rep++) {
    if (F) klu_free_numeric(&F, &com);
    double t0 = now(); F = klu_factor(Ap, Ai, Ax, S, &com); tf[rep] = now() - t0;
  }
  for (int rep = 0; rep < R; rep++) { double t0 = now(); klu_refactor(Ap, Ai, Ax, S, F, &com); tr[rep] = now() - t0; }
  for (int rep = 0; rep < R; rep++) {
    for (int i = 0; i < n; i++) b[i] = 1;
    double t0 = now(); klu_tsolve(S, F, n, 1, b, &com); ts[rep] = now() - t0;
  }
  printf("{\"N\": %d, \"n\": %d, \"ordering\": \"%s\", \"nnzLU\": %.0f, \"flops\": %.0f, \"analyze_ms\": %.3f, \"factor_ms\": %.3f, "
         "\"refactor_ms\": %.3f, \"solve_ms\": %.3f}\n", N, n, ordering ? "COLAMD" : "AMD", (double)F->lnz + F->unz, com.flops,
         1e3 * median(ta, R), 1e3 * median(tf, R), 1e3 * median(tr, R), 1e3 * median(ts, R));
  klu_free_numeric(&F, &com); klu_free_symbolic(&S, &com);
  free(Ap); free(Ai); free(Ax); free(b);
}

int main(void) {
  for (int N = 32; N <= 64; N *= 2) for (int o = 0; o <= 1; o++) run(N, o, 3e-3);
  return 0;
}
