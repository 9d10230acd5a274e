/* The MPI backend: not built yet (issue 6). */
#include "core/group.h"

dc_status dc_mpi_init(dc_group **out) {
  *out = NULL;
  return dc_init_fail(DC_ERR_UNAVAILABLE,
                      "mpi: not started by an MPI launcher (mpirun, mpiexec, "
                      "srun)");
}
