/* Unit tests of distcomm-config's parts that need no ssh: reading
 * `ip -j addr` and ping output, finding links, rings and missing links,
 * choosing subnets, and what it writes (hostfiles, dot). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrplan.h"
#include "emit.h"
#include "hostinfo.h"
#include "probe.h"
#include "run.h"
#include "topo.h"

/* ---- helpers ------------------------------------------------------------ */

static struct dcc_host g_hosts[DCC_MAX_HOSTS];
static struct dcc_topo g_topo;

/* n hosts "hK" with only a management interface eth0 = 10.99.0.K/24. */
static struct dcc_topo *hosts(int n) {
  memset(g_hosts, 0, sizeof g_hosts);
  g_topo = (struct dcc_topo){.nhosts = n, .hosts = g_hosts};
  for (int h = 0; h < n; h++) {
    struct dcc_host *x = &g_hosts[h];
    snprintf(x->ssh, sizeof x->ssh, "h%d", h + 1);
    struct dcc_iface *f = &x->ifs[x->nifs++];
    snprintf(f->name, sizeof f->name, "eth0");
    f->up = true;
    f->v4[f->nv4++] = (struct dcc_v4){0x0a630000u | (uint32_t)(h + 1), 24};
    x->mgmt = f->v4[0].addr;
    x->mgmt_if = 0;
  }
  return &g_topo;
}

static int add_if(struct dcc_host *x, const char *name) {
  struct dcc_iface *f = &x->ifs[x->nifs];
  snprintf(f->name, sizeof f->name, "%s", name);
  f->up = f->has_ll = true;
  f->ll[0] = 0xfe;
  f->ll[1] = 0x80;
  f->ll[15] = (uint8_t)(x - g_hosts) * 16 +
              (uint8_t)x->nifs; /* unique per host and iface */
  return x->nifs++;
}

/* A direct link between hosts i and j (0-based), interfaces "d<i><j><tag>". */
static void link2(struct dcc_topo *t, int i, int j, const char *tag) {
  char a[40], b[40];
  snprintf(a, sizeof a, "d%d%d%s", i + 1, j + 1, tag);
  snprintf(b, sizeof b, "d%d%d%s", j + 1, i + 1, tag);
  struct dcc_link l = {.a = {i, add_if(&t->hosts[i], a)},
                       .b = {j, add_if(&t->hosts[j], b)}};
  t->links[t->nlinks++] = l;
}

/* Adds the links in spec, one word each: the two hosts' 0-based digits, then
 * an optional interface tag for parallel links, e.g. "01a 01b 12 20". */
static struct dcc_topo *links(struct dcc_topo *t, const char *spec) {
  while (*spec) {
    char tag[2] = {spec[2] == ' ' ? '\0' : spec[2], '\0'};
    link2(t, spec[0] - '0', spec[1] - '0', tag);
    spec += tag[0] ? 3 : 2;
    while (*spec == ' ')
      spec++;
  }
  return t;
}

/* What dcc_ring_find fills, for the ring tests; find() checks its return. */
struct ring {
  int order[DCC_MAX_HOSTS], rings, missing[DCC_MAX_HOSTS][2], nm;
};

static struct ring find(const struct dcc_topo *t, int want) {
  struct ring r = {0};
  assert_int_equal(dcc_ring_find(t, r.order, &r.rings, r.missing, &r.nm), want);
  return r;
}

/* A missing host pair {a, b}, 0-based. */
static void assert_pair(const int p[2], int a, int b) {
  assert_int_equal(p[0], a);
  assert_int_equal(p[1], b);
}

static char *emit(void (*fn)(FILE *, const struct dcc_topo *),
                  const struct dcc_topo *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  fn(f, t);
  fclose(f);
  return buf;
}

static uint32_t v4(const char *s) {
  uint32_t a = 0;
  assert_int_equal(dcc_v4_parse(s, &a), 0);
  return a;
}

/* ---- ip -j addr --------------------------------------------------------- */

static const char ip_json[] =
    "[{\"ifindex\":1,\"ifname\":\"lo\",\"flags\":[\"LOOPBACK\",\"UP\",\"LOWER_"
    "UP\"],"
    "\"addr_info\":[{\"family\":\"inet\",\"local\":\"127.0.0.1\",\"prefixlen\":"
    "8},"
    "{\"family\":\"inet6\",\"local\":\"::1\",\"prefixlen\":128}]},"
    "{\"ifindex\":2,\"ifname\":\"eth0\",\"flags\":[\"BROADCAST\",\"UP\","
    "\"LOWER_UP\"],"
    "\"addr_info\":[{\"family\":\"inet\",\"local\":\"10.99.0.2\",\"prefixlen\":"
    "24},"
    "{\"family\":\"inet6\",\"local\":\"fe80::1\",\"prefixlen\":64,\"scope\":"
    "\"link\"}]},"
    "{\"ifindex\":3,\"ifname\":\"d21\",\"flags\":[\"BROADCAST\",\"MULTICAST\","
    "\"UP\",\"LOWER_UP\"],"
    "\"addr_info\":[{\"family\":\"inet6\",\"local\":\"fe80::244a:eeff:fe91:"
    "211d\",\"prefixlen\":64,"
    "\"scope\":\"link\",\"tentative\":true}]},"
    "{\"ifindex\":4,\"ifname\":\"d23\",\"flags\":[\"BROADCAST\",\"MULTICAST\","
    "\"UP\"],\"addr_info\":[]}]";

static void test_ip_json(void **state) {
  (void)state;
  struct dcc_host h = {0};
  char err[128];
  assert_int_equal(dcc_parse_ip_json(ip_json, &h, err, sizeof err), 0);
  assert_int_equal(h.nifs, 4);
  assert_true(h.ifs[0].loopback);
  assert_string_equal(h.ifs[1].name, "eth0");
  assert_int_equal(h.ifs[1].nv4, 1);
  assert_int_equal(h.ifs[1].v4[0].addr, v4("10.99.0.2"));
  assert_int_equal(h.ifs[1].v4[0].prefix, 24);
  assert_true(h.ifs[2].up && h.ifs[2].has_ll && h.ifs[2].nv4 == 0);
  uint8_t ll[16];
  inet_pton(AF_INET6, "fe80::244a:eeff:fe91:211d", ll);
  assert_memory_equal(h.ifs[2].ll, ll, 16);
  assert_false(h.ifs[3].up); /* no LOWER_UP: no cable */
  assert_int_equal(
      dcc_parse_ip_json("Object \"addr\" is unknown", &h, err, sizeof err), -1);
}

static void test_hostinfo(void **state) {
  (void)state;
  char out[4096], err[128];
  snprintf(out, sizeof out, "SSH_CONNECTION=10.99.0.1 40000 10.99.0.2 22\n%s\n",
           ip_json);
  struct dcc_host h = {0};
  assert_int_equal(dcc_hostinfo_parse(out, &h, err, sizeof err), 0);
  assert_int_equal(h.mgmt, v4("10.99.0.2"));
  assert_int_equal(h.mgmt_if, 1);
  /* the management interface and lo are never probed; a cable-less one neither
   */
  assert_false(dcc_probe_candidate(&h, 0));
  assert_false(dcc_probe_candidate(&h, 1));
  assert_true(dcc_probe_candidate(&h, 2));
  assert_false(dcc_probe_candidate(&h, 3));
  char *s = dcc_probe_script(&h);
  assert_non_null(s);
  assert_non_null(strstr(s, "for d in d21;"));
  free(s);
  assert_int_equal(
      dcc_hostinfo_parse("Permission denied\n", &h, err, sizeof err), -1);
}

/* ---- probing ------------------------------------------------------------ */

static void test_probe_links(void **state) {
  (void)state;
  struct dcc_topo *t = hosts(3);
  int a = add_if(&t->hosts[0], "d12"), b = add_if(&t->hosts[1], "d21");
  int c = add_if(&t->hosts[1], "d23"), d = add_if(&t->hosts[2], "d32");
  char addr[4][64], out[1024];
  const uint8_t *lls[4] = {t->hosts[0].ifs[a].ll, t->hosts[1].ifs[b].ll,
                           t->hosts[1].ifs[c].ll, t->hosts[2].ifs[d].ll};
  for (int i = 0; i < 4; i++)
    inet_ntop(AF_INET6, lls[i], addr[i], sizeof addr[i]);
  struct dcc_seen seen[3];
  /* h1 hears h2 (and itself); h2 hears h1 on d21 and h3 on d23; h3 hears nobody
   */
  snprintf(out, sizeof out,
           "d12 PING ff02::1(ff02::1) from :: d12: 56 data bytes\n"
           "d12 64 bytes from %s%%d12: icmp_seq=1 ttl=64 time=0.05 ms\n"
           "d12 64 bytes from %s%%d12: icmp_seq=1 ttl=64 time=0.07 ms (DUP!)\n",
           addr[0], addr[1]);
  dcc_probe_parse(out, &t->hosts[0], &seen[0]);
  snprintf(
      out, sizeof out,
      "d23 64 bytes from %s%%d23: icmp_seq=2 ttl=64\nd21 64 bytes from %s: x\n",
      addr[3], addr[0]);
  dcc_probe_parse(out, &t->hosts[1], &seen[1]);
  dcc_probe_parse("d32 ping: sendmsg: Network is unreachable\n", &t->hosts[2],
                  &seen[2]);
  assert_int_equal(seen[1].n, 2);
  /* h2-h3 is heard one way only: not a link */
  assert_int_equal(dcc_links_build(t, seen), 1);
  assert_int_equal(t->links[0].a.host, 0);
  assert_int_equal(t->links[0].a.ifc, a);
  assert_int_equal(t->links[0].b.host, 1);
  assert_int_equal(t->links[0].b.ifc, b);
}

/* ---- rings and meshes --------------------------------------------------- */

static void test_ring_of_4(void **state) {
  (void)state;
  struct dcc_topo *t = links(hosts(4), "01 12 23 30");
  struct ring r = find(t, 0);
  assert_int_equal(r.rings, 1);
  int want[4] = {0, 1, 2, 3};
  assert_memory_equal(r.order, want, sizeof want);
  assert_int_equal(dcc_mesh_missing(t, r.missing), 2); /* 1-3 and 2-4 */
  assert_pair(r.missing[0], 0, 2);
  assert_pair(r.missing[1], 1, 3);
}

/* A ring that is not in host order: 1-3-2-4-1. */
static void test_ring_reordered(void **state) {
  (void)state;
  struct ring r = find(links(hosts(4), "02 21 13 30"), 0);
  int want[4] = {0, 2, 1, 3};
  assert_memory_equal(r.order, want, sizeof want);
}

static void test_ring_broken(void **state) {
  (void)state;
  struct ring r = find(links(hosts(4), "01 23 30"), -1);
  assert_int_equal(r.nm, 1); /* exactly the one cable that is missing */
  assert_pair(r.missing[0], 1, 2);
}

static void test_ring_two_missing(void **state) {
  (void)state;
  assert_int_equal(find(links(hosts(4), "01 23"), -1).nm, 2);
}

static void test_parallel_rings(void **state) {
  (void)state;
  assert_int_equal(find(links(hosts(2), "01a 01b"), 0).rings, 2);
  /* a ring of 3 with one doubled link still has one full ring */
  struct dcc_topo *t = links(hosts(3), "01a 01b 12 20");
  assert_int_equal(find(t, 0).rings, 1);
  /* doubled everywhere: two rings */
  assert_int_equal(find(links(t, "12b 20b"), 0).rings, 2);
}

static void test_two_hosts_unlinked(void **state) {
  (void)state;
  struct ring r = find(hosts(2), -1);
  assert_int_equal(r.nm, 1);
  assert_pair(r.missing[0], 0, 1);
}

/* Enough hosts that a plain permutation search would be slow. */
static void test_ring_of_16(void **state) {
  (void)state;
  struct dcc_topo *t = hosts(16);
  for (int i = 0; i < 16; i++)
    link2(t, i, (i + 5) % 16, "");
  struct ring r = find(t, 0);
  for (int i = 0; i < 16; i++) {
    int d = (r.order[(i + 1) % 16] - r.order[i] + 16) % 16;
    assert_true(d == 5 || d == 11);
  }
}

/* ---- addresses ---------------------------------------------------------- */

static void test_subnets(void **state) {
  (void)state;
  struct dcc_v4 a = {v4("192.168.0.1"), 30}, b = {v4("192.168.0.5"), 30},
                c = {v4("192.168.0.9"), 24};
  assert_false(dcc_subnets_overlap(a, b));
  assert_true(dcc_subnets_overlap(a, c));
  assert_true(dcc_subnets_overlap(b, c));
  struct dcc_topo *t = hosts(3);
  /* a host already uses 192.168.0.0/24 and 192.168.2.7/32: skip them */
  struct dcc_iface *f = &t->hosts[2].ifs[0];
  f->v4[f->nv4++] = (struct dcc_v4){v4("192.168.0.200"), 24};
  f->v4[f->nv4++] = (struct dcc_v4){v4("192.168.2.7"), 32};
  links(t, "01 12 20");
  /* the last link is set up already: its ends share 172.16.5.0/30 */
  struct dcc_iface *e0 = &t->hosts[2].ifs[t->links[2].a.ifc],
                   *e1 = &t->hosts[0].ifs[t->links[2].b.ifc];
  e0->v4[e0->nv4++] = (struct dcc_v4){v4("172.16.5.2"), 30};
  e1->v4[e1->nv4++] = (struct dcc_v4){v4("172.16.5.1"), 30};
  assert_int_equal(dcc_plan_addresses(t, true), 0);
  assert_int_equal(t->links[0].addr_a, 0);
  assert_int_equal(t->links[2].addr_a, v4("172.16.5.2"));
  assert_int_equal(dcc_plan_addresses(t, false), 2);
  assert_int_equal(t->links[0].addr_a, v4("192.168.1.1"));
  assert_int_equal(t->links[0].addr_b, v4("192.168.1.2"));
  assert_int_equal(t->links[1].addr_a, v4("192.168.3.1"));
  assert_false(t->links[2].planned);
  char buf[512];
  assert_int_equal(dcc_setup_lines(t, 1, "sudo ", buf, sizeof buf), 2);
  assert_string_equal(buf, "sudo ip addr add 192.168.1.2/30 dev d21\n"
                           "sudo ip addr add 192.168.3.1/30 dev d23\n");
}

/* ---- output ------------------------------------------------------------- */

static void emit_ring_1(FILE *f, const struct dcc_topo *t) {
  int order[4] = {0, 1, 2, 3};
  dcc_emit_ring(f, t, order, 1);
}

static void test_emit_ring(void **state) {
  (void)state;
  struct dcc_topo *t = links(hosts(4), "01 12 23 30");
  assert_int_equal(dcc_plan_addresses(t, false), 4);
  char *s = emit(emit_ring_1, t);
  /* each host's address on the link from its left neighbour */
  assert_string_equal(
      s, "{\n  \"backend\": \"ring\",\n  \"envs\": "
         "[\"DISTCOMM_RING_NEIGHBOURS=1\"],\n"
         "  \"hosts\": [\n"
         "    {\"ssh\": \"h1\", \"ips\": [\"192.168.3.2\"]},\n"
         "    {\"ssh\": \"h2\", \"ips\": [\"192.168.0.2\"]},\n"
         "    {\"ssh\": \"h3\", \"ips\": [\"192.168.1.2\"]},\n"
         "    {\"ssh\": \"h4\", \"ips\": [\"192.168.2.2\"]}\n  ]\n}\n");
  free(s);
}

static void test_emit_mesh_ethernet_dot(void **state) {
  (void)state;
  struct dcc_topo *t = links(hosts(3), "01 02 12");
  snprintf(t->hosts[2].ssh, sizeof t->hosts[2].ssh, "root@\"odd\"");
  char *s = emit(dcc_emit_mesh, t);
  assert_string_equal(
      s, "[\n"
         "  {\"ssh\": \"h1\", \"ips\": [\"10.99.0.1\"], \"rdma\": [null, "
         "\"d12\", \"d13\"]},\n"
         "  {\"ssh\": \"h2\", \"ips\": [\"10.99.0.2\"], \"rdma\": [\"d21\", "
         "null, \"d23\"]},\n"
         "  {\"ssh\": \"root@\\\"odd\\\"\", \"ips\": [\"10.99.0.3\"], "
         "\"rdma\": [\"d31\", \"d32\", null]}\n]\n");
  free(s);
  s = emit(dcc_emit_ethernet, t);
  assert_non_null(strstr(s, "{\"ssh\": \"h2\", \"ips\": [\"10.99.0.2\"]},\n"));
  free(s);
  dcc_plan_addresses(t, false);
  s = emit(dcc_emit_dot, t);
  assert_int_equal(strncmp(s, "graph distcomm {\n", 17), 0);
  assert_non_null(strstr(s, "  h1 -- h2 [label=\"d12 — d21\\n(planned) "
                            "192.168.0.1 — 192.168.0.2\"];\n"));
  assert_non_null(
      strstr(s, "  h3 [label=\"root@\\\"odd\\\"\\n10.99.0.3\"];\n"));
  free(s);
}

static void emit_new(FILE *f, const void *arg) {
  (void)arg;
  fputs("new\n", f);
}

static char *slurp(const char *path) {
  static char buf[64];
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* A symlink planted at the old fixed temporary name (<output>.tmp) must not
 * be written through: the temporary file is made with mkstemp. */
static void test_output_no_symlink(void **state) {
  (void)state;
  char dir[] = "/tmp/dcc-out.XXXXXX", victim[64], out[64], tmp[72];
  assert_non_null(mkdtemp(dir));
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(out, sizeof out, "%s/ring.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", out);
  FILE *f = fopen(victim, "w");
  assert_non_null(f);
  fputs("keep\n", f);
  fclose(f);
  assert_int_equal(symlink(victim, tmp), 0);
  struct dcc_options o = {.output = out};
  mode_t mask = umask(022);
  assert_int_equal(dcc_write_hostfile(&o, emit_new, NULL), 0);
  umask(mask);
  assert_string_equal(slurp(victim), "keep\n");
  assert_string_equal(slurp(out), "new\n");
  struct stat st;
  assert_int_equal(lstat(out, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 0777,
                   0644); /* a hostfile, readable as before */
  unlink(tmp);
  unlink(out);
  unlink(victim);
  assert_int_equal(rmdir(dir), 0); /* nothing else left behind */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ip_json),
      cmocka_unit_test(test_hostinfo),
      cmocka_unit_test(test_probe_links),
      cmocka_unit_test(test_ring_of_4),
      cmocka_unit_test(test_ring_reordered),
      cmocka_unit_test(test_ring_broken),
      cmocka_unit_test(test_ring_two_missing),
      cmocka_unit_test(test_parallel_rings),
      cmocka_unit_test(test_two_hosts_unlinked),
      cmocka_unit_test(test_ring_of_16),
      cmocka_unit_test(test_subnets),
      cmocka_unit_test(test_emit_ring),
      cmocka_unit_test(test_emit_mesh_ethernet_dot),
      cmocka_unit_test(test_output_no_symlink),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
