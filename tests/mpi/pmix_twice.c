/* pmix_twice: the world made, used and freed twice in one process under
 * mpirun (libpmix cannot start again after its last PMIx_Finalize, so the
 * PMIx bootstrap keeps it until exit). Prints "rank R/N: round K sum S
 * backend B" per round; exits 1 on any error. */
#include <stdint.h>
#include <stdio.h>

#include "distcomm.h"

int main(void) {
  for (int k = 0; k < 2; k++) {
    dc_group *g = NULL;
    if (dc_init("any", 1, &g) != DC_OK) {
      printf("round %d: init: %s\n", k, dc_last_error());
      return 1;
    }
    int32_t one = 1, sum = 0;
    dc_status st = dc_all_sum(g, &one, &sum, 1, DC_INT32);
    printf("rank %d/%d: round %d sum %d backend %s%s\n", dc_group_rank(g),
           dc_group_size(g), k, (int)sum, dc_group_backend(g),
           st == DC_OK ? "" : " (all_sum failed)");
    int bad = st != DC_OK || sum != dc_group_size(g);
    dc_group_free(g);
    if (bad)
      return 1;
  }
  return 0;
}
