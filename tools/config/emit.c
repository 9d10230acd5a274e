#include "emit.h"

#include <string.h>

#include "hostinfo.h"
#include "topo.h"

uint32_t dcc_ethernet_addr(const struct dcc_host *h, int nhosts) {
  bool loop = h->mgmt_if >= 0 && h->ifs[h->mgmt_if].loopback;
  if (h->mgmt && !(loop && nhosts > 1))
    return h->mgmt;
  for (int i = 0; i < h->nifs; i++)
    if (h->ifs[i].up && !h->ifs[i].loopback && h->ifs[i].nv4 > 0)
      return h->ifs[i].v4[0].addr;
  return h->mgmt;
}

/* A JSON (and dot) string literal: quotes, backslashes, control bytes escaped.
 */
static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f); /* a line break in both JSON and dot labels */
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void put_addr(FILE *f, uint32_t a) {
  char ip[16];
  fprintf(f, "\"%s\"", dcc_v4_str(a, ip));
}

/* Host me's address on link k. */
static uint32_t end_addr(const struct dcc_topo *t, int k, int me) {
  const struct dcc_link *l = &t->links[k];
  return l->a.host == me ? l->addr_a : l->addr_b;
}

static const char *end_if(const struct dcc_topo *t, int k, int me) {
  const struct dcc_link *l = &t->links[k];
  struct dcc_end e = l->a.host == me ? l->a : l->b;
  return t->hosts[me].ifs[e.ifc].name;
}

/* --env's K=V strings, each after a comma (the list's first item precedes). */
static void put_envs(FILE *f, const struct dcc_topo *t) {
  for (int i = 0; i < t->nenvs; i++) {
    fputs(", ", f);
    put_str(f, t->envs[i]);
  }
}

void dcc_emit_ring(FILE *f, const struct dcc_topo *t, const int order[],
                   int rings) {
  int n = t->nhosts;
  fputs("{\n  \"backend\": \"ring\",\n  \"envs\": [\"" DCC_NEIGHBOURS_ENV "\"",
        f);
  put_envs(f, t);
  fputs("],\n  \"hosts\": [\n", f);
  for (int r = 0; r < n; r++) {
    int me = order[r], left = order[(r + n - 1) % n];
    fputs("    {\"ssh\": ", f);
    put_str(f, t->hosts[me].ssh);
    fputs(", \"ips\": [", f);
    for (int j = 0; j < rings; j++) {
      fputs(j ? ", " : "", f);
      put_addr(f, end_addr(t, dcc_link_between(t, left, me, j), me));
    }
    fprintf(f, "]}%s\n", r + 1 < n ? "," : "");
  }
  fputs("  ]\n}\n", f);
}

static void put_rdma(FILE *f, const struct dcc_topo *t, int h) {
  fputs("[", f);
  for (int j = 0; j < t->nhosts; j++) {
    fputs(j ? ", " : "", f);
    int k = dcc_link_between(t, h, j, 0);
    if (j == h || k < 0)
      fputs("null", f);
    else
      put_str(f, end_if(t, k, h));
  }
  fputs("]", f);
}

/* The ethernet and mesh hostfiles are the same list in host order; the mesh
 * one adds each host's "rdma" row. With --env, MLX's object form holds the
 * list: {"envs": [...], "hosts": [...]}. */
static void emit_hosts(FILE *f, const struct dcc_topo *t, bool rdma) {
  if (t->nenvs > 0) {
    fputs("{\n\"envs\": [", f);
    put_str(f, t->envs[0]);
    struct dcc_topo rest = {.envs = t->envs + 1, .nenvs = t->nenvs - 1};
    put_envs(f, &rest);
    fputs("],\n\"hosts\": ", f);
  }
  fputs("[\n", f);
  for (int h = 0; h < t->nhosts; h++) {
    fputs("  {\"ssh\": ", f);
    put_str(f, t->hosts[h].ssh);
    fputs(", \"ips\": [", f);
    put_addr(f, dcc_ethernet_addr(&t->hosts[h], t->nhosts));
    fputs("]", f);
    if (rdma) {
      fputs(", \"rdma\": ", f);
      put_rdma(f, t, h);
    }
    fprintf(f, "}%s\n", h + 1 < t->nhosts ? "," : "");
  }
  fputs(t->nenvs > 0 ? "]\n}\n" : "]\n", f);
}

void dcc_emit_ethernet(FILE *f, const struct dcc_topo *t) {
  emit_hosts(f, t, false);
}

void dcc_emit_mesh(FILE *f, const struct dcc_topo *t) {
  emit_hosts(f, t, true);
}

static void dot_edge(FILE *f, const struct dcc_topo *t,
                     const struct dcc_link *l) {
  char label[2 * DCC_NAME + 64], a[16], b[16];
  int w = snprintf(label, sizeof label, "%s — %s",
                   t->hosts[l->a.host].ifs[l->a.ifc].name,
                   t->hosts[l->b.host].ifs[l->b.ifc].name);
  if (l->addr_a && w > 0)
    snprintf(label + w, sizeof label - (size_t)w, "\n%s%s — %s",
             l->planned ? "(planned) " : "", dcc_v4_str(l->addr_a, a),
             dcc_v4_str(l->addr_b, b));
  fprintf(f, "  h%d -- h%d [label=", l->a.host + 1, l->b.host + 1);
  put_str(f, label);
  fputs("];\n", f);
}

void dcc_emit_dot(FILE *f, const struct dcc_topo *t) {
  fputs("graph distcomm {\n  node [shape=box];\n", f);
  for (int h = 0; h < t->nhosts; h++) {
    char label[300], ip[16];
    uint32_t e = dcc_ethernet_addr(&t->hosts[h], t->nhosts);
    const char *addr = e ? dcc_v4_str(e, ip) : "";
    bool same =
        strcmp(addr, t->hosts[h].ssh) == 0 || !e; /* no need to say it twice */
    snprintf(label, sizeof label, "%s%s%s", t->hosts[h].ssh, same ? "" : "\n",
             same ? "" : addr);
    fprintf(f, "  h%d [label=", h + 1);
    put_str(f, label);
    fputs("];\n", f);
  }
  for (int k = 0; k < t->nlinks; k++)
    dot_edge(f, t, &t->links[k]);
  fputs("}\n", f);
}
