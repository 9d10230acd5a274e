/* src/bootstrap/pmix_abi.h against the real PMIx header: our own
 * declarations of the few PMIx types and names the bootstrap uses must lay
 * out as pmix_common.h's do (sizes, offsets, values, key names). Built with
 * the header when libpmix-dev is installed (tests/CMakeLists.txt defines
 * DC_HAVE_PMIX_H); without it the test is skipped (exit 77). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "bootstrap/pmix_abi.h"

#ifdef DC_HAVE_PMIX_H
#include <pmix_common.h>

#define SAME_LAYOUT(ours, theirs, field)                                       \
  assert_int_equal(offsetof(ours, field), offsetof(theirs, field))

static void test_types(void **state) {
  (void)state;
  assert_int_equal(sizeof(dc_pmix_proc), sizeof(pmix_proc_t));
  SAME_LAYOUT(dc_pmix_proc, pmix_proc_t, rank);
  assert_int_equal(sizeof(dc_pmix_value), sizeof(pmix_value_t));
  SAME_LAYOUT(dc_pmix_value, pmix_value_t, data);
  SAME_LAYOUT(dc_pmix_value, pmix_value_t, data.string);
  SAME_LAYOUT(dc_pmix_value, pmix_value_t, data.uint32);
  assert_int_equal(sizeof(dc_pmix_info), sizeof(pmix_info_t));
  SAME_LAYOUT(dc_pmix_info, pmix_info_t, flags);
  SAME_LAYOUT(dc_pmix_info, pmix_info_t, value);
  assert_int_equal(sizeof(dc_pmix_rank), sizeof(pmix_rank_t));
  assert_int_equal(sizeof(dc_pmix_status), sizeof(pmix_status_t));
  assert_int_equal(sizeof(((dc_pmix_value *)0)->type),
                   sizeof(pmix_data_type_t));
}

static void test_values(void **state) {
  (void)state;
  assert_int_equal(DC_PMIX_SUCCESS, PMIX_SUCCESS);
  assert_int_equal(DC_PMIX_ERR_TIMEOUT, PMIX_ERR_TIMEOUT);
  assert_int_equal(DC_PMIX_RANK_WILDCARD, PMIX_RANK_WILDCARD);
  assert_int_equal(DC_PMIX_BOOL, PMIX_BOOL);
  assert_int_equal(DC_PMIX_STRING, PMIX_STRING);
  assert_int_equal(DC_PMIX_INT, PMIX_INT);
  assert_int_equal(DC_PMIX_UINT16, PMIX_UINT16);
  assert_int_equal(DC_PMIX_UINT32, PMIX_UINT32);
  assert_int_equal(DC_PMIX_GLOBAL, PMIX_GLOBAL);
  assert_int_equal(DC_PMIX_MAX_NSLEN, PMIX_MAX_NSLEN);
  assert_int_equal(DC_PMIX_MAX_KEYLEN, PMIX_MAX_KEYLEN);
  assert_string_equal(DC_PMIX_JOB_SIZE, PMIX_JOB_SIZE);
  assert_string_equal(DC_PMIX_LOCAL_SIZE, PMIX_LOCAL_SIZE);
  assert_string_equal(DC_PMIX_LOCAL_RANK, PMIX_LOCAL_RANK);
  assert_string_equal(DC_PMIX_COLLECT_DATA, PMIX_COLLECT_DATA);
  assert_string_equal(DC_PMIX_TIMEOUT, PMIX_TIMEOUT);
  assert_string_equal(DC_PMIX_OPTIONAL, PMIX_OPTIONAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_types),
      cmocka_unit_test(test_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
  printf("SKIP: pmix_common.h not found (apt-get install libpmix-dev to "
         "check src/bootstrap/pmix_abi.h against it)\n");
  return 77;
}
#endif
