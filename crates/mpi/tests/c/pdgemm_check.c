/* A ScaLAPACK program: PDGEMM on 2D block-cyclic matrices set up through BLACS and DESCINIT,
 * checked entry by entry against a double-precision reference of the global product.
 * Run plain (ScaLAPACK's own PDGEMM) and with libhetblas_mpi.so preloaded (hetblas's);
 * HETBLAS_EXPECT_PRELOAD=1 makes it fail unless hetblas served the calls.
 *
 *   mpicc pdgemm_check.c -o pdgemm_check -lscalapack-openmpi -ldl -lm
 *   mpirun -np 4 -x LD_PRELOAD=.../libhetblas_mpi.so -x HETBLAS_EXPECT_PRELOAD=1 ./pdgemm_check
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_pinfo(int *me, int *nprocs);
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
void Cblacs_exit(int cont);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc);

/* Deterministic pseudo-random entries in [-1, 1) of matrix `seed`. */
static double rnd(uint64_t seed, int i, int j) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (((uint64_t)i << 32) ^ (uint64_t)j);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / (double)(1ull << 52) - 1.0;
}

/* Global index of local index l along a block-cyclic axis. */
static int g_of(int l, int nb, int p, int src, int np) {
    int shift = (p - src + np) % np;
    return ((l / nb) * np + shift) * nb + l % nb;
}

typedef struct {
    int gm, gn, mb, nb, rsrc, csrc;
    uint64_t seed;
    int lr, lc;
    double *v;
    int desc[9];
} Mat;

static void mat_init(Mat *x, int ctxt, int gm, int gn, int mb, int nb, int rsrc, int csrc,
                     uint64_t seed, int myrow, int mycol, int nprow, int npcol, int nan_fill) {
    int info;
    x->gm = gm; x->gn = gn; x->mb = mb; x->nb = nb; x->rsrc = rsrc; x->csrc = csrc;
    x->seed = seed;
    x->lr = numroc_(&gm, &mb, &myrow, &rsrc, &nprow);
    x->lc = numroc_(&gn, &nb, &mycol, &csrc, &npcol);
    int lld = x->lr > 1 ? x->lr : 1;
    descinit_(x->desc, &gm, &gn, &mb, &nb, &rsrc, &csrc, &ctxt, &lld, &info);
    if (info != 0) { fprintf(stderr, "descinit info %d\n", info); MPI_Abort(MPI_COMM_WORLD, 2); }
    x->v = malloc(sizeof(double) * (size_t)lld * (x->lc > 0 ? x->lc : 1));
    for (int jl = 0; jl < x->lc; jl++)
        for (int il = 0; il < x->lr; il++) {
            int i = g_of(il, mb, myrow, rsrc, nprow), j = g_of(jl, nb, mycol, csrc, npcol);
            x->v[il + (size_t)jl * lld] = nan_fill ? NAN : rnd(seed, i, j);
        }
}

int main(int argc, char **argv) {
    int me, np, ctxt, nprow, npcol, myrow, mycol, failures = 0, checked = 0;
    Cblacs_pinfo(&me, &np);
    int grids[3][2] = {{1, np}, {2, np / 2}, {np, 1}};
    /* Cases: m n k transa transb alpha beta mb nb ia ja ib jb ic jc */
    struct { int m, n, k; char ta, tb; double alpha, beta; int mb, nb, ia, ja, ib, jb, ic, jc; } cases[] = {
        {37, 29, 41, 'N', 'N', 1.0, 0.0, 4, 4, 1, 1, 1, 1, 1, 1},
        {33, 21, 17, 'T', 'N', -0.5, 0.25, 3, 5, 1, 1, 1, 1, 1, 1},
        {19, 40, 23, 'N', 'T', 2.0, 1.0, 8, 8, 1, 1, 1, 1, 1, 1},
        {25, 25, 25, 'T', 'T', 1.0, -1.0, 2, 3, 1, 1, 1, 1, 1, 1},
        {20, 17, 15, 'N', 'N', 0.75, 0.5, 4, 4, 3, 2, 2, 5, 3, 5},
        {16, 12, 30, 'C', 'N', 1.0, 0.0, 5, 5, 2, 4, 4, 1, 1, 2},
    };
    int ncases = sizeof cases / sizeof cases[0];
    for (int g = 0; g < 3; g++) {
        if (grids[g][0] * grids[g][1] != np) continue;
        Cblacs_get(-1, 0, &ctxt);
        Cblacs_gridinit(&ctxt, "Row", grids[g][0], grids[g][1]);
        Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
        for (int t = 0; t < ncases; t++) {
            int m = cases[t].m, n = cases[t].n, k = cases[t].k;
            int ta = cases[t].ta != 'N', tb = cases[t].tb != 'N';
            int ia = cases[t].ia, ja = cases[t].ja, ib = cases[t].ib, jb = cases[t].jb;
            int ic = cases[t].ic, jc = cases[t].jc;
            int am = (ta ? k : m) + ia - 1, an = (ta ? m : k) + ja - 1;
            int bm = (tb ? n : k) + ib - 1, bn = (tb ? k : n) + jb - 1;
            int cm = m + ic - 1, cn = n + jc - 1, mb = cases[t].mb, nb = cases[t].nb;
            Mat A, B, C;
            uint64_t s = 10 * (uint64_t)t + 1;
            mat_init(&A, ctxt, am, an, mb, nb, 0, 0, s, myrow, mycol, nprow, npcol, 0);
            mat_init(&B, ctxt, bm, bn, nb, nb, 0, 0, s + 1, myrow, mycol, nprow, npcol, 0);
            mat_init(&C, ctxt, cm, cn, mb, nb, 0, 0, s + 2, myrow, mycol, nprow, npcol,
                     cases[t].beta == 0.0);
            pdgemm_(&cases[t].ta, &cases[t].tb, &m, &n, &k, &cases[t].alpha, A.v, &ia, &ja, A.desc,
                    B.v, &ib, &jb, B.desc, &cases[t].beta, C.v, &ic, &jc, C.desc);
            int lld = C.desc[8];
            for (int jl = 0; jl < C.lc; jl++)
                for (int il = 0; il < C.lr; il++) {
                    int gi = g_of(il, mb, myrow, 0, nprow), gj = g_of(jl, nb, mycol, 0, npcol);
                    double got = C.v[il + (size_t)jl * lld], want, bound = 0.0;
                    int i = gi - (ic - 1), j = gj - (jc - 1);
                    if (i >= 0 && i < m && j >= 0 && j < n) {
                        double sum = 0.0, abs_sum = 0.0;
                        for (int l = 0; l < k; l++) {
                            double av = ta ? rnd(A.seed, ia - 1 + l, ja - 1 + i) : rnd(A.seed, ia - 1 + i, ja - 1 + l);
                            double bv = tb ? rnd(B.seed, ib - 1 + j, jb - 1 + l) : rnd(B.seed, ib - 1 + l, jb - 1 + j);
                            sum += av * bv;
                            abs_sum += fabs(av * bv);
                        }
                        double c0 = rnd(C.seed, gi, gj);
                        want = cases[t].alpha * sum + (cases[t].beta == 0.0 ? 0.0 : cases[t].beta * c0);
                        bound = 2.0 * (k + 2) * 2.2e-16 * (fabs(cases[t].alpha) * abs_sum +
                                fabs(cases[t].beta) * fabs(c0)) + 1e-300;
                    } else {
                        want = cases[t].beta == 0.0 ? NAN : rnd(C.seed, gi, gj);
                    }
                    int ok = isnan(want) ? isnan(got) : fabs(got - want) <= bound;
                    checked++;
                    if (!ok && failures++ < 5)
                        fprintf(stderr, "grid %dx%d case %d: C(%d,%d) = %g, expected %g\n",
                                nprow, npcol, t, gi, gj, got, want);
                }
            free(A.v); free(B.v); free(C.v);
        }
        Cblacs_gridexit(ctxt);
    }
    uint64_t (*calls)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT, "hetblas_mpi_pdgemm_calls");
    unsigned long long served = calls ? (unsigned long long)calls() : 0;
    const char *expect = getenv("HETBLAS_EXPECT_PRELOAD");
    if (expect && strcmp(expect, "1") == 0 && served == 0) {
        fprintf(stderr, "rank %d: hetblas did not serve PDGEMM (is LD_PRELOAD set?)\n", me);
        failures++;
    }
    int total_fail = 0, total_checked = 0;
    MPI_Allreduce(&failures, &total_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checked, &total_checked, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("pdgemm_check: %s, %d entries checked, %d wrong; PDGEMM served by %s\n",
               total_fail ? "FAIL" : "PASS", total_checked, total_fail,
               served ? "hetblas-mpi" : "the linked ScaLAPACK");
    Cblacs_exit(0);
    return total_fail != 0;
}
