/* The environment variable list of src/config/env.h: every entry complete,
 * names unique, each kind read as its old getenv() code read it, and the
 * "Environment variables" table of docs/configuration.md the same as the list.
 *
 * test_env --readme prints that table (paste it into docs/configuration.md;
 * cli.docs checks the whole table, this test each row). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/env.h"

static void row(const dc_env_var *v, char *out, size_t n) {
  snprintf(out, n, "| `%s` | %s | %s |", v->name, v->def, v->meaning);
}

static void test_table_complete(void **state) {
  (void)state;
  for (int i = 0; i < DC_ENV_COUNT; i++) {
    const dc_env_var *v = dc_env_info((dc_env_id)i);
    assert_non_null(v);
    assert_non_null(v->name);
    assert_true(v->name[0] != '\0');
    assert_non_null(v->def);
    assert_true(v->def[0] != '\0');
    assert_non_null(v->meaning);
    assert_true(v->meaning[0] != '\0');
    assert_null(strchr(v->meaning, '|')); /* one table cell */
    for (int j = 0; j < i; j++)
      if (strcmp(v->name, dc_env_info((dc_env_id)j)->name) == 0)
        fail_msg("%s is listed twice", v->name);
    char *end;
    switch (v->kind) {
    case DC_ENV_KIND_SWITCH:
      if (strcmp(v->def, "0") && strcmp(v->def, "1") && strcmp(v->def, "auto"))
        fail_msg("%s: a switch's default is 0, 1 or auto", v->name);
      break;
    case DC_ENV_KIND_COUNT:
    case DC_ENV_KIND_NUMBER:
      strtoll(v->def, &end, 10);
      assert_true(*end == '\0');
      assert_true(v->lo <= v->hi);
      break;
    case DC_ENV_KIND_SECONDS:
      assert_true(strtod(v->def, &end) > 0);
      assert_true(*end == '\0');
      break;
    default:
      assert_true(v->kind == DC_ENV_KIND_TEXT || v->kind == DC_ENV_KIND_FLAG);
    }
  }
  assert_null(dc_env_info(DC_ENV_COUNT));
  assert_string_equal(dc_env_info(DC_ENV_SOCKETS)->name, "DISTCOMM_SOCKETS");
}

static void set(const char *name, const char *value) {
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

/* DISTCOMM_SOCKETS as atoi read it: leading digits, 1..16, else 2. */
static void test_count(void **state) {
  (void)state;
  static const struct {
    const char *value;
    long long want;
  } cases[] = {{NULL, 2}, {"4", 4},  {"16", 16}, {"4x", 4},  {" 3", 3},
               {"0", 2},  {"17", 2}, {"-1", 2},  {"abc", 2}, {"", 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    set("DISTCOMM_SOCKETS", cases[i].value);
    assert_int_equal(dc_env_int(DC_ENV_SOCKETS), cases[i].want);
  }
  set("DISTCOMM_MPI_PIECE", "15");
  assert_int_equal(dc_env_int(DC_ENV_MPI_PIECE), 1 << 30);
  set("DISTCOMM_MPI_PIECE", "16");
  assert_int_equal(dc_env_int(DC_ENV_MPI_PIECE), 16);
  set("DISTCOMM_MPI_PIECE", NULL);
  assert_int_equal(dc_env_int(DC_ENV_MPI_PIECE), 1 << 30);
  set("DISTCOMM_SOCKETS", NULL);
}

/* The MPI launchers' sizes: the whole text a decimal in 0..2^30-1, else -1. */
static void test_number(void **state) {
  (void)state;
  static const struct {
    const char *value;
    long long want;
  } cases[] = {{NULL, -1},         {"4", 4},
               {"0", 0},           {"1073741823", 1073741823},
               {"4x", -1},         {"4 ", -1},
               {"", -1},           {"-1", -1},
               {"1073741824", -1}, {"99999999999999999999", -1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    set("OMPI_COMM_WORLD_SIZE", cases[i].value);
    assert_int_equal(dc_env_int(DC_ENV_OMPI_SIZE), cases[i].want);
  }
  set("OMPI_COMM_WORLD_SIZE", NULL);
}

static void test_seconds(void **state) {
  (void)state;
  static const struct {
    const char *value;
    double want;
  } cases[] = {{NULL, 300}, {"2.5", 2.5}, {"60", 60}, {"0", 300},
               {"-1", 300}, {"5s", 300},  {"", 300},  {"nan", 300}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    set("DISTCOMM_TIMEOUT", cases[i].value);
    assert_true(dc_env_double(DC_ENV_TIMEOUT) == cases[i].want);
    assert_true(dc_default_timeout() == cases[i].want);
  }
  set("DISTCOMM_TIMEOUT", NULL);
}

static void test_flags(void **state) {
  (void)state;
  /* FLAG: set, non-empty, not starting with '0'. */
  set("MLX_RING_VERBOSE", NULL);
  static const struct {
    const char *value;
    int want;
  } flag[] = {{NULL, 0}, {"", 0}, {"0", 0}, {"01", 0}, {"1", 1}, {"yes", 1}};
  for (size_t i = 0; i < sizeof flag / sizeof flag[0]; i++) {
    set("DISTCOMM_VERBOSE", flag[i].value);
    assert_int_equal(dc_env_flag(DC_ENV_VERBOSE), flag[i].want);
    assert_int_equal(dc_env_verbose(), flag[i].want);
  }
  set("DISTCOMM_VERBOSE", NULL);
  set("MLX_RING_VERBOSE", "2");
  assert_int_equal(dc_env_verbose(), 1);
  set("MLX_RING_VERBOSE", NULL);

  /* SWITCH: exactly "0" or "1", else the default. */
  static const struct {
    const char *value;
    int shm, cma, neighbours;
  } sw[] = {{NULL, 1, -1, 0}, {"0", 0, 0, 0},    {"1", 1, 1, 1},
            {"2", 1, -1, 0},  {"yes", 1, -1, 0}, {"", 1, -1, 0}};
  for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) {
    set("DISTCOMM_SHM", sw[i].value);
    set("DISTCOMM_CMA", sw[i].value);
    set("DISTCOMM_RING_NEIGHBOURS", sw[i].value);
    assert_int_equal(dc_env_flag(DC_ENV_SHM), sw[i].shm);
    assert_int_equal(dc_env_flag(DC_ENV_CMA), sw[i].cma);
    assert_int_equal(dc_env_flag(DC_ENV_RING_NEIGHBOURS), sw[i].neighbours);
  }
  set("DISTCOMM_SHM", NULL);
  set("DISTCOMM_CMA", NULL);
  set("DISTCOMM_RING_NEIGHBOURS", NULL);
}

static void test_text(void **state) {
  (void)state;
  set("MLX_HOSTFILE", NULL);
  assert_null(dc_env_str(DC_ENV_HOSTFILE));
  set("MLX_HOSTFILE", "/tmp/h.json");
  assert_string_equal(dc_env_str(DC_ENV_HOSTFILE), "/tmp/h.json");
  set("MLX_HOSTFILE", NULL);
  set("DISTCOMM_SOCKETS", " 7 "); /* any variable's raw text */
  assert_string_equal(dc_env_str(DC_ENV_SOCKETS), " 7 ");
  set("DISTCOMM_SOCKETS", NULL);
  assert_null(dc_env_str(DC_ENV_COUNT));
}

/* Every row test_env --readme prints is a line of docs/configuration.md. */
static void test_readme_matches(void **state) {
  (void)state;
  FILE *f = fopen(DC_README, "r");
  assert_non_null(f);
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  for (int i = 0; i < DC_ENV_COUNT; i++) {
    char line[512];
    row(dc_env_info((dc_env_id)i), line, sizeof line - 1);
    strcat(line, "\n");
    if (!strstr(text, line))
      fail_msg(
          "docs/configuration.md lacks the row (run test_env --readme):\n%s",
          line);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--readme") == 0) {
    puts("| variable | default | meaning |\n|---|---|---|");
    for (int i = 0; i < DC_ENV_COUNT; i++) {
      char line[512];
      row(dc_env_info((dc_env_id)i), line, sizeof line);
      puts(line);
    }
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_complete), cmocka_unit_test(test_count),
      cmocka_unit_test(test_number),         cmocka_unit_test(test_seconds),
      cmocka_unit_test(test_flags),          cmocka_unit_test(test_text),
      cmocka_unit_test(test_readme_matches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
