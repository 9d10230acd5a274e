/* Unit tests of src/config/nodelist.c: Slurm's compressed host lists, as
 * SLURM_STEP_NODELIST holds them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "config/nodelist.h"

/* Every host of list, space-separated, in out. */
static void expand(const char *list, char *out, size_t n) {
  char err[256], host[64];
  long count = 0;
  assert_int_equal(
      dc_nodelist_host(list, -1, host, sizeof host, &count, err, sizeof err),
      DC_OK);
  out[0] = '\0';
  for (long i = 0; i < count; i++) {
    long c2 = 0;
    assert_int_equal(
        dc_nodelist_host(list, i, host, sizeof host, &c2, err, sizeof err),
        DC_OK);
    assert_int_equal(c2, count);
    size_t u = strlen(out);
    snprintf(out + u, n - u, "%s%s", i ? " " : "", host);
  }
}

static void test_expands(void **state) {
  (void)state;
  char out[512];
  expand("n1", out, sizeof out);
  assert_string_equal(out, "n1");
  expand("n[1-3,7],gpu[01-02]", out, sizeof out);
  assert_string_equal(out, "n1 n2 n3 n7 gpu01 gpu02");
  expand("a,b.example.org,c-1", out, sizeof out);
  assert_string_equal(out, "a b.example.org c-1");
  expand("n[8-11]", out, sizeof out);
  assert_string_equal(out, "n8 n9 n10 n11");
  expand("n[008-010]-ib", out, sizeof out);
  assert_string_equal(out, "n008-ib n009-ib n010-ib");
  expand("r[1-2]n[1-2]", out, sizeof out);
  assert_string_equal(out, "r1n1 r1n2 r2n1 r2n2");
  expand("[1-2]", out, sizeof out);
  assert_string_equal(out, "1 2");
}

/* A huge list is counted and indexed without expanding it. */
static void test_large(void **state) {
  (void)state;
  char host[64], err[256];
  long count = 0;
  assert_int_equal(dc_nodelist_host("n[00001-99999],m[1-2]", 99999, host,
                                    sizeof host, &count, err, sizeof err),
                   DC_OK);
  assert_int_equal(count, 100001);
  assert_string_equal(host, "m1");
}

static void bad(const char *list, long index, const char *word) {
  char host[16], err[256];
  long count = 7;
  assert_int_equal(
      dc_nodelist_host(list, index, host, sizeof host, &count, err, sizeof err),
      DC_ERR_CONFIG);
  if (!strstr(err, word) || !strstr(err, "host list"))
    fail_msg("%s: '%s' not in: %s", list, word, err);
  assert_int_equal(count, 0);
}

static void test_malformed(void **state) {
  (void)state;
  bad("", 0, "empty name");
  bad("a,,b", 0, "empty name");
  bad("a,", 0, "empty name");
  bad("n[1-3", 0, "unbalanced");
  bad("n1-3]", 0, "unbalanced");
  bad("n[[1-2]]", 0, "unbalanced");
  bad("n[]", 0, "empty brackets");
  bad("n[3-1]", 0, "3-1");
  bad("n[a-b]", 0, "a-b");
  bad("n[1-]", 0, "1-");
  bad("n[1,,2]", 0, "1,,2");
  bad("n[1-3] x", 0, "character");
  bad("n[1-2]", 2, "no host 2");
  bad("averyveryverylonghostname", 0, "longer than");
  bad("n[1-99999999]m[1-99]", 0, "more than");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expands),
      cmocka_unit_test(test_large),
      cmocka_unit_test(test_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
