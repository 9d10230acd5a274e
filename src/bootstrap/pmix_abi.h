/* The few PMIx types and names the PMIx bootstrap uses (bootstrap/pmix.c),
 * written from the PMIx standard (v4 ABI, as Debian's libpmix2 4.2 has it),
 * so that the library needs no PMIx headers to build and loads libpmix only
 * under a PMIx server. tests/unit/test_pmix_abi.c compares the sizes and
 * offsets with the real pmix_common.h when libpmix-dev is installed. */
#ifndef DC_BOOTSTRAP_PMIX_ABI_H
#define DC_BOOTSTRAP_PMIX_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DC_PMIX_MAX_NSLEN 255
#define DC_PMIX_MAX_KEYLEN 511

typedef int dc_pmix_status;
#define DC_PMIX_SUCCESS 0
#define DC_PMIX_ERR_TIMEOUT (-24)

typedef uint32_t dc_pmix_rank;
#define DC_PMIX_RANK_WILDCARD (UINT32_MAX - 1)

/* pmix_proc_t */
typedef struct dc_pmix_proc {
  char nspace[DC_PMIX_MAX_NSLEN + 1];
  dc_pmix_rank rank;
} dc_pmix_proc;

/* pmix_data_type_t values */
#define DC_PMIX_BOOL 1
#define DC_PMIX_STRING 3
#define DC_PMIX_INT 6
#define DC_PMIX_UINT16 13
#define DC_PMIX_UINT32 14

/* pmix_value_t: a type and a union whose largest member is three
 * pointers (pmix_envar_t); only the members read here are named. */
typedef struct dc_pmix_value {
  uint16_t type;
  union {
    bool flag;
    char *string;
    int integer;
    uint16_t uint16;
    uint32_t uint32;
    void *pad[3];
  } data;
} dc_pmix_value;

/* pmix_info_t */
typedef struct dc_pmix_info {
  char key[DC_PMIX_MAX_KEYLEN + 1];
  uint32_t flags;
  dc_pmix_value value;
} dc_pmix_info;

/* pmix_scope_t */
#define DC_PMIX_GLOBAL 3

/* Keys (attribute names) */
#define DC_PMIX_JOB_SIZE "pmix.job.size"     /* uint32 */
#define DC_PMIX_LOCAL_SIZE "pmix.local.size" /* uint32 */
#define DC_PMIX_LOCAL_RANK "pmix.lrank"      /* uint16 */
#define DC_PMIX_COLLECT_DATA "pmix.collect"  /* bool */
#define DC_PMIX_TIMEOUT "pmix.timeout"       /* int seconds */
#define DC_PMIX_OPTIONAL "pmix.optional"     /* bool: local data only */

#endif
