/* Unit tests of the address slots that split swaps between members
 * (src/backends/native/split.c): a peer's slot is not trusted to end in
 * a NUL. Run under ASan: the last slot lies at the end of an exact-size
 * heap block, so reading past it is caught. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "backends/native/native.h"

static char *slots(int count) {
  char *t = calloc((size_t)count, RING_ADDR_SLOT);
  assert_non_null(t);
  for (int i = 0; i < count; i++)
    strcpy(t + (size_t)i * RING_ADDR_SLOT, "127.0.0.1:5000");
  return t;
}

static void good_slots_parse(void **state) {
  (void)state;
  char *t = slots(3), why[160] = "";
  dc_addr a[3];
  assert_int_equal(ring_parse_slots(t, 3, a, why, sizeof why), DC_OK);
  assert_string_equal(a[2].text, "127.0.0.1:5000");
  free(t);
}

/* The last slot filled to the brim, no NUL: refused, nothing read past. */
static void unterminated_slot_is_refused(void **state) {
  (void)state;
  char *t = slots(2), why[160] = "";
  dc_addr a[2];
  memset(t + RING_ADDR_SLOT, '1', RING_ADDR_SLOT);
  assert_int_equal(ring_parse_slots(t, 2, a, why, sizeof why), DC_ERR_MISMATCH);
  assert_non_null(strstr(why, "address 1 is not terminated"));
  free(t);
}

static void bad_address_is_refused(void **state) {
  (void)state;
  char *t = slots(2), why[160] = "";
  dc_addr a[2];
  strcpy(t, "not an address");
  assert_int_equal(ring_parse_slots(t, 2, a, why, sizeof why), DC_ERR_MISMATCH);
  assert_true(why[0] != '\0');
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(good_slots_parse),
      cmocka_unit_test(unterminated_slot_is_refused),
      cmocka_unit_test(bad_address_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
