/* distcomm-config's shared types: hosts as seen over ssh, their interfaces,
 * and the direct links found between them. Fixed-size arrays: a config run
 * covers a handful of machines, and fixed sizes keep the parsers simple. */
#ifndef DCC_CONFIG_H
#define DCC_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define DCC_PROG "distcomm-config"
#define DCC_MAX_HOSTS 16 /* ring search is exponential in this (Held-Karp) */
#define DCC_MAX_IFS 32
#define DCC_MAX_V4 8
#define DCC_MAX_LINKS 128
#define DCC_NAME 64
#define DCC_MAX_ENVS 64

/* An IPv4 network address with its prefix, host byte order. */
struct dcc_v4 {
  uint32_t addr;
  int prefix;
};

struct dcc_iface {
  char name[DCC_NAME];
  bool up; /* UP, LOWER_UP, carrier: configured and cable (peer) present */
  bool loopback;
  struct dcc_v4 v4[DCC_MAX_V4];
  int nv4;
  bool has_ll; /* an IPv6 link-local (fe80::/10) address, used to probe */
  uint8_t ll[16];
};

struct dcc_host {
  char ssh[256]; /* as the user wrote it: the hostfile's "ssh" */
  uint32_t mgmt; /* the IPv4 address ssh reached (SSH_CONNECTION), 0 if none */
  int mgmt_if;   /* the interface carrying it, -1 if unknown */
  struct dcc_iface ifs[DCC_MAX_IFS];
  int nifs;
};

/* One end of a direct link: interface ifc of host. */
struct dcc_end {
  int host, ifc;
};

/* A direct link between two hosts' interfaces, with the IPv4 addresses
 * each end uses on it (0 when not yet addressed). */
struct dcc_link {
  struct dcc_end a, b;
  uint32_t addr_a, addr_b;
  int prefix;
  bool planned; /* addresses chosen by us, not yet on the interfaces */
};

struct dcc_topo {
  int nhosts;
  struct dcc_host *hosts;
  struct dcc_link links[DCC_MAX_LINKS];
  int nlinks;
  const char *const *envs; /* --env K=V, written into the hostfile's "envs" */
  int nenvs;
};

#endif
