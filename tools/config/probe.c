#include "probe.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names go into a shell command line: allow only what interface names use. */
static bool plain_name(const char *s) {
  if (*s == '\0' || *s == '-')
    return false;
  return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"
                   "789_.-") == strlen(s);
}

bool dcc_probe_candidate(const struct dcc_host *h, int i) {
  const struct dcc_iface *f = &h->ifs[i];
  return f->up && !f->loopback && i != h->mgmt_if && f->has_ll &&
         plain_name(f->name);
}

/* Pings out of every interface in parallel: 3 echoes in about 1 s (the
 * info script already waited for duplicate address detection). Each output
 * line is tagged with its interface by one `echo`, a single write, so lines
 * from parallel pings never mix. -n: no DNS. */
static const char probe_head[] = "for d in";
static const char probe_tail[] =
    "; do ping -6 -n -c 3 -i 0.5 -w 2 -I \"$d\" ff02::1 2>&1 | "
    "while IFS= read -r l; do echo \"$d $l\"; done & done; wait";

char *dcc_probe_script(const struct dcc_host *h) {
  size_t len = sizeof probe_head + sizeof probe_tail;
  for (int i = 0; i < h->nifs; i++)
    len += strlen(h->ifs[i].name) + 1;
  char *s = malloc(len);
  if (s == NULL)
    return NULL;
  strcpy(s, probe_head);
  int n = 0;
  for (int i = 0; i < h->nifs; i++)
    if (dcc_probe_candidate(h, i)) {
      strcat(strcat(s, " "), h->ifs[i].name);
      n++;
    }
  strcat(s, probe_tail);
  if (n == 0) {
    free(s);
    return NULL;
  }
  return s;
}

static int iface_by_name(const struct dcc_host *h, const char *name) {
  for (int i = 0; i < h->nifs; i++)
    if (strcmp(h->ifs[i].name, name) == 0)
      return i;
  return -1;
}

/* "d12 64 bytes from fe80::1%d12: icmp_seq=1 ttl=64 time=0.1 ms" */
static void parse_line(const char *line, const struct dcc_host *h,
                       struct dcc_seen *seen) {
  char ifname[DCC_NAME], addr[128];
  const char *from = strstr(line, " from ");
  if (from == NULL || sscanf(line, "%63s", ifname) != 1 ||
      sscanf(from + 6, "%127s", addr) != 1)
    return;
  addr[strcspn(addr, "%")] = '\0'; /* drop the zone (and the trailing ':') */
  size_t n = strlen(addr);
  if (n > 0 && addr[n - 1] == ':')
    addr[n - 1] = '\0';
  struct dcc_sight s = {.ifc = iface_by_name(h, ifname)};
  if (s.ifc < 0 || inet_pton(AF_INET6, addr, s.addr) != 1 ||
      seen->n == DCC_MAX_SIGHTS)
    return;
  seen->s[seen->n++] = s;
}

void dcc_probe_parse(const char *out, const struct dcc_host *h,
                     struct dcc_seen *seen) {
  seen->n = 0;
  while (*out) {
    size_t len = strcspn(out, "\n");
    char line[512];
    snprintf(line, sizeof line, "%.*s",
             (int)(len < sizeof line ? len : sizeof line - 1), out);
    parse_line(line, h, seen);
    out += len + (out[len] == '\n');
  }
}

static bool saw(const struct dcc_seen *seen, int ifc, const uint8_t addr[16]) {
  for (int k = 0; k < seen->n; k++)
    if (seen->s[k].ifc == ifc && memcmp(seen->s[k].addr, addr, 16) == 0)
      return true;
  return false;
}

static bool have_link(const struct dcc_topo *t, struct dcc_end a,
                      struct dcc_end b) {
  for (int k = 0; k < t->nlinks; k++) {
    const struct dcc_link *l = &t->links[k];
    if (l->a.host == a.host && l->a.ifc == a.ifc && l->b.host == b.host &&
        l->b.ifc == b.ifc)
      return true;
  }
  return false;
}

/* Host h's interface ifc heard addr: add the link if the owner of addr
 * heard h's interface back. Each link is stored once, lower host first. */
static void match_sight(struct dcc_topo *t, const struct dcc_seen *seen, int h,
                        const struct dcc_sight *s) {
  const uint8_t *mine = t->hosts[h].ifs[s->ifc].ll;
  for (int h2 = h + 1; h2 < t->nhosts; h2++)
    for (int i2 = 0; i2 < t->hosts[h2].nifs; i2++) {
      const struct dcc_iface *f = &t->hosts[h2].ifs[i2];
      struct dcc_end a = {h, s->ifc}, b = {h2, i2};
      if (!f->has_ll || memcmp(f->ll, s->addr, 16) != 0 ||
          !saw(&seen[h2], i2, mine) || have_link(t, a, b) ||
          t->nlinks == DCC_MAX_LINKS)
        continue;
      t->links[t->nlinks++] = (struct dcc_link){.a = a, .b = b};
    }
}

static int link_cmp(const struct dcc_topo *t, const struct dcc_link *x,
                    const struct dcc_link *y) {
  if (x->a.host != y->a.host)
    return x->a.host - y->a.host;
  if (x->b.host != y->b.host)
    return x->b.host - y->b.host;
  int c = strcmp(t->hosts[x->a.host].ifs[x->a.ifc].name,
                 t->hosts[y->a.host].ifs[y->a.ifc].name);
  return c ? c
           : strcmp(t->hosts[x->b.host].ifs[x->b.ifc].name,
                    t->hosts[y->b.host].ifs[y->b.ifc].name);
}

static void sort_links(struct dcc_topo *t) {
  for (int i = 1; i < t->nlinks; i++)
    for (int j = i; j > 0 && link_cmp(t, &t->links[j - 1], &t->links[j]) > 0;
         j--) {
      struct dcc_link tmp = t->links[j];
      t->links[j] = t->links[j - 1];
      t->links[j - 1] = tmp;
    }
}

int dcc_links_build(struct dcc_topo *t, const struct dcc_seen *seen) {
  t->nlinks = 0;
  for (int h = 0; h < t->nhosts; h++)
    for (int k = 0; k < seen[h].n; k++)
      match_sight(t, seen, h, &seen[h].s[k]);
  sort_links(t);
  return t->nlinks;
}
