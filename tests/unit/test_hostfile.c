/* Unit tests of src/config/hostfile.c and cjson_load.c: MLX's ring hostfile,
 * "ip:port" addresses and MLX_RANK-style integers. Run it under ASan or
 * valgrind: several cases hand the parser exact-size, non-NUL-terminated
 * buffers to prove it never reads past len. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/cjson_load.h"
#include "config/hostfile.h"

/* ---- helpers ------------------------------------------------------------ */

/* An exact-size heap copy (no NUL after the last byte), so ASan flags any
 * read past len. */
static char *exact_copy(const char *s, size_t len) {
  char *p = malloc(len ? len : 1);
  assert_non_null(p);
  memcpy(p, s, len);
  return p;
}

static dc_status parse_str(const char *json, dc_hostfile *hf, char *err,
                           size_t errlen) {
  size_t len = strlen(json);
  char *copy = exact_copy(json, len);
  dc_status st = dc_hostfile_parse(copy, len, hf, err, errlen);
  free(copy);
  return st;
}

static void assert_zeroed(const dc_hostfile *hf) {
  assert_int_equal(hf->nranks, 0);
  assert_int_equal(hf->naddrs, 0);
  assert_null(hf->addrs);
}

/* Every message is one line and contains the expected words. */
static void assert_msg(const char *err, const char *want) {
  if (!strstr(err, want))
    fail_msg("message \"%s\" lacks \"%s\"", err, want);
  assert_null(strchr(err, '\n'));
}

static int port_of(const dc_addr *a) {
  if (a->sa.ss_family == AF_INET)
    return ntohs(((const struct sockaddr_in *)&a->sa)->sin_port);
  return ntohs(((const struct sockaddr_in6 *)&a->sa)->sin6_port);
}

static void assert_v4(const dc_addr *a, const char *ip, int port) {
  const struct sockaddr_in *sin = (const struct sockaddr_in *)&a->sa;
  char buf[INET_ADDRSTRLEN];
  assert_int_equal(sin->sin_family, AF_INET);
  assert_int_equal(a->salen, sizeof *sin);
  assert_non_null(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf));
  assert_string_equal(buf, ip);
  assert_int_equal(port_of(a), port);
}

static void assert_v6(const dc_addr *a, const char *ip, int port,
                      uint32_t scope) {
  const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a->sa;
  char buf[INET6_ADDRSTRLEN];
  assert_int_equal(sin6->sin6_family, AF_INET6);
  assert_int_equal(a->salen, sizeof *sin6);
  assert_non_null(inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf));
  assert_string_equal(buf, ip);
  assert_int_equal(port_of(a), port);
  assert_int_equal(sin6->sin6_scope_id, scope);
}

static char *write_temp(const char *content) {
  char *path = strdup("/tmp/dc_test_hostfile_XXXXXX");
  assert_non_null(path);
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  size_t len = strlen(content);
  assert_int_equal(write(fd, content, len), (ssize_t)len);
  close(fd);
  return path;
}

/* ---- libcjson missing (must run first: the library is loaded once) ------ */

static void test_cjson_unavailable(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dc_hostfile hf;
    char err[512] = "";
    dc_json_set_soname_for_tests("libdistcomm-no-such-cjson.so.9");
    dc_status st =
        dc_hostfile_parse("[[\"1.2.3.4:5\"]]", 15, &hf, err, sizeof err);
    int ok = st == DC_ERR_UNAVAILABLE && hf.addrs == NULL &&
             strstr(err, "needs libcjson1 (apt-get install libcjson1)") &&
             strstr(err, "libdistcomm-no-such-cjson.so.9");
    if (!ok)
      fprintf(stderr, "unexpected: %d %s\n", st, err);
    _exit(ok ? 0 : 1);
  }
  int wstatus;
  assert_int_equal(waitpid(pid, &wstatus, 0), pid);
  assert_true(WIFEXITED(wstatus));
  assert_int_equal(WEXITSTATUS(wstatus), 0);
}

/* ---- addresses ---------------------------------------------------------- */

static void test_addr_ipv4(void **state) {
  (void)state;
  dc_addr a;
  char err[256];
  assert_int_equal(dc_addr_parse("10.0.0.1:5000", 0, &a, err, sizeof err),
                   DC_OK);
  assert_v4(&a, "10.0.0.1", 5000);
  assert_string_equal(a.text, "10.0.0.1:5000");
  assert_int_equal(
      dc_addr_parse("255.255.255.255:65535", 0, &a, err, sizeof err), DC_OK);
  assert_v4(&a, "255.255.255.255", 65535);
  assert_int_equal(dc_addr_parse("127.0.0.1:1", 0, &a, err, sizeof err), DC_OK);
  assert_v4(&a, "127.0.0.1", 1);
  /* Port 0 ("any port") only where the caller allows it. */
  assert_int_equal(dc_addr_parse("0.0.0.0:0", 1, &a, err, sizeof err), DC_OK);
  assert_v4(&a, "0.0.0.0", 0);
  assert_int_equal(dc_addr_parse("0.0.0.0:0", 0, &a, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "bad port");
  assert_msg(err, "1..65535");
}

static void test_addr_ipv6(void **state) {
  (void)state;
  dc_addr a;
  char err[256];
  assert_int_equal(dc_addr_parse("[::1]:5000", 0, &a, err, sizeof err), DC_OK);
  assert_v6(&a, "::1", 5000, 0);
  assert_string_equal(a.text, "[::1]:5000");
  assert_int_equal(dc_addr_parse("[2001:db8::7]:65535", 0, &a, err, sizeof err),
                   DC_OK);
  assert_v6(&a, "2001:db8::7", 65535, 0);
  assert_int_equal(
      dc_addr_parse("[::ffff:10.0.0.1]:80", 0, &a, err, sizeof err), DC_OK);
  assert_v6(&a, "::ffff:10.0.0.1", 80, 0);
  /* Scope ids: a number, a local interface, or another host's interface
   * (unknown here: scope 0, not an error). */
  assert_int_equal(dc_addr_parse("[fe80::1%7]:5000", 0, &a, err, sizeof err),
                   DC_OK);
  assert_v6(&a, "fe80::1", 5000, 7);
  assert_int_equal(dc_addr_parse("[fe80::1%lo]:5000", 0, &a, err, sizeof err),
                   DC_OK);
  assert_v6(&a, "fe80::1", 5000, if_nametoindex("lo"));
  assert_string_equal(a.text, "[fe80::1%lo]:5000");
  assert_int_equal(dc_addr_parse("[fe80::1%en9]:5000", 0, &a, err, sizeof err),
                   DC_OK);
  assert_v6(&a, "fe80::1", 5000, if_nametoindex("en9"));
}

struct bad_case {
  const char *input;
  const char *want; /* words the message must contain */
};

static void test_addr_bad(void **state) {
  (void)state;
  static const struct bad_case cases[] = {
      {"10.0.0.x:50", "\"10.0.0.x:50\" is not ip:port"},
      {"10.0.0:50", "not a numeric IPv4"},
      {"10.0.0.256:50", "not a numeric IPv4"},
      {"10.0.0.1", "no port"},
      {"10.0.0.1:", "bad port"},
      {"10.0.0.1:0", "bad port"},
      {"10.0.0.1:65536", "bad port"},
      {"10.0.0.1:99999999999999999999", "bad port"},
      {"10.0.0.1:+5", "bad port"},
      {"10.0.0.1:-5", "bad port"},
      {"10.0.0.1: 5", "bad port"},
      {"10.0.0.1:5 ", "bad port"},
      {"10.0.0.1:0x10", "bad port"},
      {" 10.0.0.1:5", "not a numeric IPv4"},
      {":5000", "no address"},
      {"", "no port"},
      {"::1:5000", "brackets"},
      {"::1", "brackets"},
      {"[::1:5000", "[ipv6]:port"},
      {"[::1]5000", "[ipv6]:port"},
      {"[::1]", "[ipv6]:port"},
      {"[]:5000", "no address"},
      {"[10.0.0.1]:5000", "not a numeric IPv6"},
      {"[fe80::1%]:5000", "scope"},
      {"[fe80::1%a/b]:5000", "scope"},
      {"[fe80::1%averyveryverylongifname]:5000", "scope"},
      {"localhost:5000", "use 127.0.0.1"},
      {"LocalHost:5000", "127.0.0.1"},
      {"node1:5000", "numeric"},
      {"[localhost]:5000", "numeric"},
      {"10.0.0.1:5000\n", "\\x0a"},
      {"\"10.0.0.1\":5000", "\\\"10.0.0.1\\\""},
      {"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc:dddd:eeee",
       "too long"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dc_addr a;
    char err[256] = "";
    memset(&a, 0xab, sizeof a);
    dc_status st = dc_addr_parse(cases[i].input, 0, &a, err, sizeof err);
    if (st != DC_ERR_CONFIG)
      fail_msg("\"%s\": status %d (%s)", cases[i].input, st, err);
    assert_msg(err, cases[i].want);
    assert_int_equal(a.salen, 0); /* failure leaves a zeroed address */
    assert_string_equal(a.text, "");
  }
  char err[64];
  assert_int_equal(dc_addr_parse(NULL, 0, NULL, err, sizeof err),
                   DC_ERR_INVALID);
}

/* A tiny err buffer truncates, never overflows. */
static void test_addr_small_err(void **state) {
  (void)state;
  dc_addr a;
  char err[8];
  assert_int_equal(dc_addr_parse("localhost:1", 0, &a, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_int_equal(strlen(err), 7);
  assert_int_equal(dc_addr_parse("localhost:1", 0, &a, NULL, 0), DC_ERR_CONFIG);
}

/* ---- hostfiles ---------------------------------------------------------- */

static void test_hostfile_ipv4(void **state) {
  (void)state;
  dc_hostfile hf;
  char err[512];
  assert_int_equal(parse_str("[[\"10.0.0.1:5000\"], [\"10.0.0.2:5000\"]]", &hf,
                             err, sizeof err),
                   DC_OK);
  assert_int_equal(hf.nranks, 2);
  assert_int_equal(hf.naddrs, 1);
  assert_v4(&hf.addrs[0], "10.0.0.1", 5000);
  assert_v4(&hf.addrs[1], "10.0.0.2", 5000);
  assert_string_equal(hf.addrs[1].text, "10.0.0.2:5000");
  dc_hostfile_free(&hf);
  assert_zeroed(&hf);
  dc_hostfile_free(&hf); /* twice is harmless */
}

static void test_hostfile_multi(void **state) {
  (void)state;
  dc_hostfile hf;
  char err[512];
  const char *json = "[\n"
                     "  [\"10.0.0.1:5000\", \"10.0.1.1:5001\"],\n"
                     "  [\"10.0.0.2:5000\", \"10.0.1.2:5001\"],\n"
                     "  [\"10.0.0.3:5000\", \"10.0.1.3:5001\"]\n"
                     "]\n";
  assert_int_equal(parse_str(json, &hf, err, sizeof err), DC_OK);
  assert_int_equal(hf.nranks, 3);
  assert_int_equal(hf.naddrs, 2);
  for (int r = 0; r < 3; r++) {
    char ip[32];
    snprintf(ip, sizeof ip, "10.0.0.%d", r + 1);
    assert_v4(&hf.addrs[r * 2], ip, 5000);
    snprintf(ip, sizeof ip, "10.0.1.%d", r + 1);
    assert_v4(&hf.addrs[r * 2 + 1], ip, 5001);
  }
  dc_hostfile_free(&hf);
}

static void test_hostfile_ipv6(void **state) {
  (void)state;
  dc_hostfile hf;
  char err[512];
  assert_int_equal(parse_str("[[\"[::1]:5000\", \"127.0.0.1:6000\"],"
                             " [\"[::1]:5001\", \"[fe80::2%7]:6001\"]]",
                             &hf, err, sizeof err),
                   DC_OK);
  assert_int_equal(hf.nranks, 2);
  assert_int_equal(hf.naddrs, 2);
  assert_v6(&hf.addrs[0], "::1", 5000, 0);
  assert_v4(&hf.addrs[1], "127.0.0.1", 6000);
  assert_v6(&hf.addrs[2], "::1", 5001, 0);
  assert_v6(&hf.addrs[3], "fe80::2", 6001, 7);
  dc_hostfile_free(&hf);
}

/* MLX iterates each entry, and iterating a JSON string yields the string,
 * so MLX accepts a flat list of strings: one address per rank. */
static void test_hostfile_flat_strings(void **state) {
  (void)state;
  dc_hostfile hf;
  char err[512];
  assert_int_equal(parse_str("[\"127.0.0.1:5000\", \"127.0.0.1:5001\"]", &hf,
                             err, sizeof err),
                   DC_OK);
  assert_int_equal(hf.nranks, 2);
  assert_int_equal(hf.naddrs, 1);
  assert_v4(&hf.addrs[1], "127.0.0.1", 5001);
  dc_hostfile_free(&hf);
  assert_int_equal(parse_str("[[\"127.0.0.1:5000\"]]", &hf, err, sizeof err),
                   DC_OK);
  assert_int_equal(hf.nranks, 1);
  dc_hostfile_free(&hf);
}

static void test_hostfile_bad(void **state) {
  (void)state;
  static const struct bad_case cases[] = {
      {"not json", "hostfile: not valid JSON (line 1, column 1)"},
      {"[[\"1.2.3.4:5\"],\n [\"1.2.3.5:5\"]", "not valid JSON (line 2"},
      {"[[\"1.2.3.4:5\"]] x", "unexpected text after the JSON value"},
      {"", "is empty"},
      {" \n\t", "is empty"},
      {"{}", "top level is an object, not a list"},
      {"\"10.0.0.1:5\"", "top level is a string"},
      {"[]", "empty list"},
      {"[[\"1.2.3.4:5\"], 7]", "entry 1 is not a list of \"ip:port\" strings"},
      {"[null]", "entry 0 is not a list"},
      {"[{\"ssh\": \"h1\", \"ips\": [\"10.0.0.1\"]}]", "mlx.launch"},
      {"[[\"1.2.3.4:5\"], []]", "entry 1 is empty"},
      {"[[\"1.2.3.4:5\"], [5]]", "entry 1 address 0 is a number"},
      {"[[\"1.2.3.4:5\"], [[\"1.2.3.5:5\"]]]", "entry 1 address 0 is a list"},
      {"[[\"1.2.3.4:5\", \"1.2.3.4:6\"], [\"1.2.3.5:5\"]]",
       "entry 1 (rank 1) has 1 address but entry 0 has 2"},
      {"[[\"1.2.3.4:5\"], [\"1.2.3.5:5\", \"1.2.3.5:6\"]]", "rank 1"},
      {"[[\"1.2.3.4:5\"], [\"10.0.0.x:50\"]]",
       "hostfile: entry 1 address \"10.0.0.x:50\" is not ip:port"},
      {"[[\"localhost:5000\"], [\"localhost:5001\"]]",
       "entry 0 address \"localhost:5000\" names a host"},
      {"[[\"127.0.0.1:5000\"], [\"[::1]:0\"]]", "entry 1 address \"[::1]:0\""},
      {"[[\"127.0.0.1:5000\"], [\"127.0.0.1:5000\"]]",
       "entry 1 address \"127.0.0.1:5000\" is also used by entry 0"},
      {"[[\"127.0.0.1:5000\", \"127.0.0.1:5000\"]]", "distinct"},
      {"[[\"[::1]:5\"], [\"127.0.0.1:6\"], [\"[0::1]:5\"]]",
       "entry 2 address \"[0::1]:5\" is also used by entry 0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dc_hostfile hf = {7, 7, (dc_addr *)&hf}; /* garbage to be cleared */
    char err[512] = "";
    dc_status st = parse_str(cases[i].input, &hf, err, sizeof err);
    if (st != DC_ERR_CONFIG)
      fail_msg("case %zu: status %d (%s)", i, st, err);
    assert_msg(err, cases[i].want);
    assert_zeroed(&hf);
    dc_hostfile_free(&hf);
  }
}

/* A NUL inside the text is not JSON; text == NULL is allowed only empty. */
static void test_hostfile_odd_args(void **state) {
  (void)state;
  dc_hostfile hf;
  char err[256];
  assert_int_equal(
      dc_hostfile_parse("[[\"1.2.3.4:5\"]]", 16, &hf, err, sizeof err),
      DC_ERR_CONFIG);
  assert_msg(err, "unexpected text");
  assert_int_equal(dc_hostfile_parse(NULL, 5, &hf, err, sizeof err),
                   DC_ERR_INVALID);
  assert_int_equal(dc_hostfile_parse(NULL, 0, &hf, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "empty");
  assert_int_equal(dc_hostfile_parse("[]", 2, NULL, err, sizeof err),
                   DC_ERR_INVALID);
  dc_hostfile_free(NULL);
  dc_hostfile zero = {0, 0, NULL};
  dc_hostfile_free(&zero);
}

/* len, not a NUL, ends the text: every prefix of a valid file is parsed
 * from an exact-size buffer (ASan catches a read past it); only the whole
 * file (with or without its trailing newline) is valid. */
static void test_hostfile_not_nul_terminated(void **state) {
  (void)state;
  const char *json = "[[\"10.0.0.1:5000\",\"[::1]:7\"],[\"10.0.0.2:5000\","
                     "\"[::2]:7\"]]\n";
  size_t full = strlen(json);
  for (size_t len = 0; len <= full; len++) {
    dc_hostfile hf;
    char err[512];
    char *copy = exact_copy(json, len);
    dc_status st = dc_hostfile_parse(copy, len, &hf, err, sizeof err);
    free(copy);
    if (len >= full - 1) {
      assert_int_equal(st, DC_OK);
      assert_int_equal(hf.nranks, 2);
      dc_hostfile_free(&hf);
    } else {
      assert_int_equal(st, DC_ERR_CONFIG);
      assert_zeroed(&hf);
    }
  }
  /* A valid file followed by junk that len excludes. */
  dc_hostfile hf;
  char err[512];
  assert_int_equal(
      dc_hostfile_parse("[[\"1.2.3.4:5\"]]GARBAGE", 15, &hf, err, sizeof err),
      DC_OK);
  assert_int_equal(hf.nranks, 1);
  dc_hostfile_free(&hf);
}

/* Random damage to a valid file: never a crash, never an overread (ASan),
 * always OK or DC_ERR_CONFIG, and a failure leaves nothing to free. */
static void test_hostfile_mutations(void **state) {
  (void)state;
  const char *json = "[[\"10.0.0.1:5000\", \"[fe80::1%lo]:5001\"],\n"
                     " [\"10.0.0.2:5000\", \"[fe80::2%3]:5001\"]]";
  static const char alphabet[] = "[]{}\",:.%0123456789abcdefx \n\\\x01\xff";
  size_t len = strlen(json);
  unsigned seed = 12345;
  for (int iter = 0; iter < 5000; iter++) {
    char *copy = exact_copy(json, len);
    int edits = 1 + iter % 4;
    for (int e = 0; e < edits; e++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % len;
      copy[at] = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
    }
    size_t cut = iter % 3 == 0 ? (seed >> 4) % (len + 1) : len;
    dc_hostfile hf;
    char err[512] = "";
    dc_status st = dc_hostfile_parse(copy, cut, &hf, err, sizeof err);
    free(copy);
    assert_true(st == DC_OK || st == DC_ERR_CONFIG);
    if (st == DC_OK) {
      assert_true(hf.nranks >= 1 && hf.naddrs >= 1);
      dc_hostfile_free(&hf);
    } else {
      assert_zeroed(&hf);
      assert_null(strchr(err, '\n'));
    }
  }
}

/* ---- files -------------------------------------------------------------- */

static void test_load_ok(void **state) {
  (void)state;
  char *path = write_temp("[[\"127.0.0.1:5000\"], [\"127.0.0.1:5001\"]]\n");
  dc_hostfile hf;
  char err[512];
  assert_int_equal(dc_hostfile_load(path, &hf, err, sizeof err), DC_OK);
  assert_int_equal(hf.nranks, 2);
  assert_v4(&hf.addrs[1], "127.0.0.1", 5001);
  dc_hostfile_free(&hf);
  unlink(path);
  free(path);
}

static void test_load_errors(void **state) {
  (void)state;
  dc_hostfile hf;
  char err[512];
  assert_int_equal(
      dc_hostfile_load("/nonexistent/dir/h.json", &hf, err, sizeof err),
      DC_ERR_CONFIG);
  assert_msg(err, "MLX_HOSTFILE /nonexistent/dir/h.json: No such file");
  assert_zeroed(&hf);

  assert_int_equal(dc_hostfile_load("/tmp", &hf, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "MLX_HOSTFILE /tmp: Is a directory");

  /* Content errors name the file too. */
  char *path = write_temp("[[\"10.0.0.1:5000\"], [\"10.0.0.x:50\"]]");
  assert_int_equal(dc_hostfile_load(path, &hf, err, sizeof err), DC_ERR_CONFIG);
  char want[512];
  snprintf(want, sizeof want,
           "MLX_HOSTFILE %s: entry 1 address \"10.0.0.x:50\" is not ip:port",
           path);
  assert_msg(err, want);
  assert_zeroed(&hf);
  unlink(path);
  free(path);

  /* A path with a newline is shown escaped: the message stays one line. */
  assert_int_equal(dc_hostfile_load("/nonexistent/a\nb", &hf, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "/nonexistent/a\\x0ab");
  assert_int_equal(dc_hostfile_load(NULL, &hf, err, sizeof err),
                   DC_ERR_INVALID);
}

/* Files over 16 MiB are refused without reading them all. */
static void test_load_too_big(void **state) {
  (void)state;
  char *path = write_temp("[");
  assert_int_equal(truncate(path, (off_t)17 << 20), 0);
  dc_hostfile hf;
  char err[512];
  assert_int_equal(dc_hostfile_load(path, &hf, err, sizeof err), DC_ERR_CONFIG);
  assert_msg(err, "larger than 16 MiB");
  assert_zeroed(&hf);
  unlink(path);
  free(path);
}

/* ---- MLX_RANK-style integers ------------------------------------------- */

static void test_env_int(void **state) {
  (void)state;
  static const struct {
    const char *value;
    long want;
  } good[] = {{"0", 0}, {"7", 7}, {"0012", 12}, {"2147483647", 2147483647L}};
  static const char *const bad[] = {
      "",     "abc",        "-1",
      "+1",   " 1",         "1 ",
      "1\n",  "2147483648", "99999999999999999999999",
      "0x10", "1.0",        "1e3",
      "３"};
  char err[256];
  long v;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    v = -5;
    assert_int_equal(
        dc_env_parse_int("MLX_RANK", good[i].value, &v, err, sizeof err),
        DC_OK);
    assert_int_equal(v, good[i].want);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = -5;
    dc_status st = dc_env_parse_int("MLX_RANK", bad[i], &v, err, sizeof err);
    if (st != DC_ERR_CONFIG)
      fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(v, -5); /* untouched on failure */
    assert_msg(err, "is not a non-negative integer");
  }
  assert_int_equal(dc_env_parse_int("MLX_RANK", "abc", &v, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "MLX_RANK='abc' is not a non-negative integer");
  assert_int_equal(dc_env_parse_int("MLX_RANK", "1\n", &v, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "MLX_RANK='1\\x0a'");
  assert_int_equal(dc_env_parse_int("MLX_RANK", NULL, &v, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_msg(err, "MLX_RANK is not set");
  assert_int_equal(dc_env_parse_int("MLX_RANK", "1", NULL, err, sizeof err),
                   DC_ERR_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cjson_unavailable), /* first: see above */
      cmocka_unit_test(test_addr_ipv4),
      cmocka_unit_test(test_addr_ipv6),
      cmocka_unit_test(test_addr_bad),
      cmocka_unit_test(test_addr_small_err),
      cmocka_unit_test(test_hostfile_ipv4),
      cmocka_unit_test(test_hostfile_multi),
      cmocka_unit_test(test_hostfile_ipv6),
      cmocka_unit_test(test_hostfile_flat_strings),
      cmocka_unit_test(test_hostfile_bad),
      cmocka_unit_test(test_hostfile_odd_args),
      cmocka_unit_test(test_hostfile_not_nul_terminated),
      cmocka_unit_test(test_hostfile_mutations),
      cmocka_unit_test(test_load_ok),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_load_too_big),
      cmocka_unit_test(test_env_int),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
