/* What each host tells about itself over ssh: the address ssh reached it at
 * and its interfaces (`ip -j addr show`). */
#ifndef DCC_HOSTINFO_H
#define DCC_HOSTINFO_H

#include <stddef.h>

#include "config.h"

/* The remote command whose output dcc_hostinfo_parse() reads. */
extern const char dcc_info_script[];

/* Parses the info script's output into h (h->ssh is left alone).
 * Returns 0, or -1 with a message in err. */
int dcc_hostinfo_parse(const char *out, struct dcc_host *h, char *err,
                       size_t errlen);

/* Parses `ip -j addr show` JSON into h->ifs. Returns 0 or -1 with err. */
int dcc_parse_ip_json(const char *json, struct dcc_host *h, char *err,
                      size_t errlen);

/* The interface of h holding IPv4 address a, or -1. */
int dcc_find_v4_iface(const struct dcc_host *h, uint32_t a);

/* Dotted quad of a (host byte order) in buf, which it returns. */
const char *dcc_v4_str(uint32_t a, char buf[16]);

/* Parses a dotted quad into *a (host byte order); returns 0 or -1. */
int dcc_v4_parse(const char *s, uint32_t *a);

#endif
