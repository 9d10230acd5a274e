#include "addrplan.h"

#include <stdio.h>
#include <string.h>

#include "hostinfo.h"

static uint32_t mask_of(int prefix) {
  return prefix <= 0    ? 0
         : prefix >= 32 ? 0xffffffffu
                        : ~((1u << (32 - prefix)) - 1);
}

bool dcc_subnets_overlap(struct dcc_v4 x, struct dcc_v4 y) {
  uint32_t m = mask_of(x.prefix < y.prefix ? x.prefix : y.prefix);
  return ((x.addr ^ y.addr) & m) == 0;
}

/* Addresses on both ends of l in one subnet: the link is already set up. */
static bool take_existing(const struct dcc_topo *t, struct dcc_link *l) {
  const struct dcc_iface *fa = &t->hosts[l->a.host].ifs[l->a.ifc];
  const struct dcc_iface *fb = &t->hosts[l->b.host].ifs[l->b.ifc];
  for (int i = 0; i < fa->nv4; i++)
    for (int j = 0; j < fb->nv4; j++)
      if (fa->v4[i].prefix == fb->v4[j].prefix &&
          fa->v4[i].addr != fb->v4[j].addr &&
          dcc_subnets_overlap(fa->v4[i], fb->v4[j])) {
        l->addr_a = fa->v4[i].addr;
        l->addr_b = fb->v4[j].addr;
        l->prefix = fa->v4[i].prefix;
        return true;
      }
  return false;
}

static bool subnet_taken(const struct dcc_topo *t, struct dcc_v4 net) {
  for (int h = 0; h < t->nhosts; h++)
    for (int i = 0; i < t->hosts[h].nifs; i++)
      for (int k = 0; k < t->hosts[h].ifs[i].nv4; k++)
        if (dcc_subnets_overlap(net, t->hosts[h].ifs[i].v4[k]))
          return true;
  for (int k = 0; k < t->nlinks; k++) {
    struct dcc_v4 used = {t->links[k].addr_a, t->links[k].prefix};
    if (t->links[k].addr_a && dcc_subnets_overlap(net, used))
      return true;
  }
  return false;
}

/* The next 192.168.k.0/30, from k = *next on, whose whole /24 is unused:
 * one /24 per link keeps clear of any address near it. */
static int plan_one(const struct dcc_topo *t, struct dcc_link *l, int *next) {
  for (; *next < 256; (*next)++) {
    struct dcc_v4 net = {0xc0a80000u | (uint32_t)*next << 8, 24};
    if (subnet_taken(t, net))
      continue;
    l->addr_a = net.addr + 1;
    l->addr_b = net.addr + 2;
    l->prefix = 30;
    l->planned = true;
    return 0;
  }
  return -1;
}

int dcc_plan_addresses(struct dcc_topo *t, bool existing_only) {
  int planned = 0, next = 0;
  for (int k = 0; k < t->nlinks; k++)
    if (!take_existing(t, &t->links[k]) && !existing_only) {
      if (plan_one(t, &t->links[k], &next) != 0)
        return -1;
      planned++;
    }
  return planned;
}

int dcc_setup_lines(const struct dcc_topo *t, int h, const char *prefix,
                    char *buf, size_t len) {
  int n = 0;
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0; k < t->nlinks; k++) {
    const struct dcc_link *l = &t->links[k];
    if (!l->planned || (l->a.host != h && l->b.host != h))
      continue;
    bool is_a = l->a.host == h;
    char ip[16];
    int w =
        snprintf(buf + used, len - used, "%sip addr add %s/%d dev %s\n", prefix,
                 dcc_v4_str(is_a ? l->addr_a : l->addr_b, ip), l->prefix,
                 t->hosts[h].ifs[is_a ? l->a.ifc : l->b.ifc].name);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
    n++;
  }
  return n;
}
