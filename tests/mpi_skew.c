// A preloaded MPI_Allreduce (through MPI's profiling interface, PMPI) that
// knocks one rank out of step: on the rank named by S2S_FAULT_SKEW_RANK,
// the first float of every sum of floats grows by 1e-3 after the sum. For
// tests/mpi_train_test.sh, which checks that the weight hash after a
// validation catches it.
#include <mpi.h>
#include <stdlib.h>

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
    int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
    const char *skew = getenv("S2S_FAULT_SKEW_RANK");
    int rank = -1;
    PMPI_Comm_rank(comm, &rank);
    if (rc == MPI_SUCCESS && skew && atoi(skew) == rank && type == MPI_FLOAT && count > 1)
        ((float *)recv)[0] += 1e-3f;
    return rc;
}
