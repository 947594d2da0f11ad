/*
 * mpi_latency.c -- per-call distribution of small collectives (anchor for
 * gocoll bench's p50_us and p99_us columns).
 *
 * Collectives: MPI_Allreduce (float, MPI_SUM, out of place), MPI_Bcast (float,
 * root 0), of a few bytes each. Every call is timed alone, between untimed
 * barriers, as in mpi_coll_bench.c and gocoll bench; each rank sorts its
 * times, and the figure reported for a statistic is its largest over the
 * ranks, as gocoll bench reports its own. A tenth as many warm-up calls
 * (at least 2) come first.
 *
 * Usage: mpirun -np N ./mpi_latency [-i impl] [-t transport] [-b bytes]
 *                                    [-n iters] [-c allreduce,bcast]
 * Output: CSV lines impl,transport,np,collective,bytes,avg_us,p50_us,p99_us,max_us
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

static int rank, np;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nearest is the nearest-rank p-th percentile of n sorted times. */
static double nearest(const double *t, int n, int p) {
    int i = (n * p + 99) / 100;
    return t[(i < 1 ? 1 : i) - 1];
}

static void measure(const char *impl, const char *tr, const char *coll, long bytes, int iters) {
    int n = (int)(bytes / 4), warm = iters / 10 < 2 ? 2 : iters / 10;
    float *s = malloc((n ? n : 1) * sizeof(float)), *r = malloc((n ? n : 1) * sizeof(float));
    double *t = malloc(iters * sizeof(double)), sum = 0;
    for (int i = 0; i < n; i++) s[i] = (float)(rank + 1);
    for (int it = 0; it < warm + iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (strcmp(coll, "allreduce") == 0)
            MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Bcast(s, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        if (it >= warm) t[it - warm] = (t1 - t0) * 1e6;
    }
    qsort(t, iters, sizeof(double), cmp);
    for (int i = 0; i < iters; i++) sum += t[i];
    double mine[4] = {sum / iters, nearest(t, iters, 50), nearest(t, iters, 99), t[iters - 1]}, all[4];
    MPI_Reduce(mine, all, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s,%s,%d,%s,%ld,%.3f,%.3f,%.3f,%.3f\n", impl, tr, np, coll, bytes, all[0], all[1], all[2], all[3]);
    free(s); free(r); free(t);
}

int main(int argc, char **argv) {
    const char *impl = "openmpi", *tr = "unknown", *colls = "allreduce,bcast";
    long bytes = 8; int iters = 5000, o;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((o = getopt(argc, argv, "i:t:b:n:c:")) != -1) {
        switch (o) {
        case 'i': impl = optarg; break;
        case 't': tr = optarg; break;
        case 'b': bytes = atol(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'c': colls = optarg; break;
        default:
            if (rank == 0) fprintf(stderr, "bad option\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (iters < 1 || bytes < 0) {
        if (rank == 0) fprintf(stderr, "want -n >= 1 and -b >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) printf("impl,transport,np,collective,bytes,avg_us,p50_us,p99_us,max_us\n");
    if (strstr(colls, "allreduce")) measure(impl, tr, "allreduce", bytes, iters);
    if (strstr(colls, "bcast")) measure(impl, tr, "bcast", bytes, iters);
    MPI_Finalize();
    return 0;
}
