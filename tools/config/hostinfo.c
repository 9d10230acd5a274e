#include "hostinfo.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* SSH_CONNECTION is "client_ip client_port server_ip server_port": the
 * server ip is the address we reached this host at (the management one).
 * First, links that were just plugged in settle: at most 1 s for an up
 * interface to get its carrier, at most 5 s for duplicate address
 * detection to end (a tentative IPv6 link-local address answers no probe;
 * every host answers this before any probe starts). */
const char dcc_info_script[] =
    "n=0; while [ $n -lt 25 ]; do "
    "t=$(ip -6 addr show tentative 2>/dev/null); c=$(ip link show up "
    "2>/dev/null | grep NO-CARRIER); "
    "[ -z \"$t\" ] && { [ -z \"$c\" ] || [ $n -ge 5 ]; } && break; sleep 0.2; "
    "n=$((n+1)); done; "
    "echo \"SSH_CONNECTION=$SSH_CONNECTION\"; ip -j addr show";

const char *dcc_v4_str(uint32_t a, char buf[16]) {
  snprintf(buf, 16, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
           a & 255);
  return buf;
}

int dcc_v4_parse(const char *s, uint32_t *a) {
  struct in_addr in;
  if (inet_pton(AF_INET, s, &in) != 1)
    return -1;
  *a = ntohl(in.s_addr);
  return 0;
}

static bool has_flag(const cJSON *flags, const char *name) {
  const cJSON *f;
  cJSON_ArrayForEach(f,
                     flags) if (cJSON_IsString(f) &&
                                strcmp(f->valuestring, name) == 0) return true;
  return false;
}

/* One entry of addr_info: an IPv4 address, or the IPv6 link-local one. */
static void add_addr(struct dcc_iface *ifc, const cJSON *ai) {
  const char *fam = cJSON_GetStringValue(cJSON_GetObjectItem(ai, "family"));
  const char *local = cJSON_GetStringValue(cJSON_GetObjectItem(ai, "local"));
  const cJSON *plen = cJSON_GetObjectItem(ai, "prefixlen");
  if (fam == NULL || local == NULL || !cJSON_IsNumber(plen))
    return;
  uint32_t a;
  if (strcmp(fam, "inet") == 0 && ifc->nv4 < DCC_MAX_V4 &&
      dcc_v4_parse(local, &a) == 0) {
    ifc->v4[ifc->nv4].addr = a;
    ifc->v4[ifc->nv4++].prefix = plen->valueint;
    return;
  }
  uint8_t six[16];
  if (strcmp(fam, "inet6") == 0 && !ifc->has_ll &&
      inet_pton(AF_INET6, local, six) == 1 && six[0] == 0xfe &&
      (six[1] & 0xc0) == 0x80) {
    memcpy(ifc->ll, six, 16);
    ifc->has_ll = true;
  }
}

static int add_iface(struct dcc_host *h, const cJSON *j) {
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(j, "ifname"));
  if (name == NULL || strlen(name) >= DCC_NAME)
    return -1;
  if (h->nifs == DCC_MAX_IFS)
    return 0; /* more interfaces than a config run can use: ignore the rest */
  struct dcc_iface *ifc = &h->ifs[h->nifs++];
  memset(ifc, 0, sizeof *ifc);
  snprintf(ifc->name, sizeof ifc->name, "%s", name);
  const cJSON *flags = cJSON_GetObjectItem(j, "flags");
  ifc->up = has_flag(flags, "UP") && has_flag(flags, "LOWER_UP") &&
            !has_flag(flags, "NO-CARRIER");
  ifc->loopback = has_flag(flags, "LOOPBACK");
  const cJSON *ai;
  cJSON_ArrayForEach(ai, cJSON_GetObjectItem(j, "addr_info")) add_addr(ifc, ai);
  return 0;
}

int dcc_parse_ip_json(const char *json, struct dcc_host *h, char *err,
                      size_t errlen) {
  cJSON *root = cJSON_Parse(json);
  if (!cJSON_IsArray(root)) {
    snprintf(err, errlen,
             "`ip -j addr show` printed no JSON list (is iproute2 installed?)");
    cJSON_Delete(root);
    return -1;
  }
  h->nifs = 0;
  const cJSON *j;
  int rc = 0;
  cJSON_ArrayForEach(j, root) if (add_iface(h, j) != 0) {
    snprintf(err, errlen,
             "`ip -j addr show`: an interface without a valid \"ifname\"");
    rc = -1;
    break;
  }
  cJSON_Delete(root);
  return rc;
}

int dcc_find_v4_iface(const struct dcc_host *h, uint32_t a) {
  for (int i = 0; i < h->nifs; i++)
    for (int k = 0; k < h->ifs[i].nv4; k++)
      if (h->ifs[i].v4[k].addr == a)
        return i;
  return -1;
}

/* "SSH_CONNECTION=c cport s sport": s may be IPv4, ::ffff:IPv4 or IPv6. */
static uint32_t server_ip(const char *line) {
  char c[64], s[64];
  if (sscanf(line, "SSH_CONNECTION=%63s %*s %63s", c, s) != 2)
    return 0;
  const char *v4 = strncmp(s, "::ffff:", 7) == 0 ? s + 7 : s;
  uint32_t a;
  return dcc_v4_parse(v4, &a) == 0 ? a : 0;
}

int dcc_hostinfo_parse(const char *out, struct dcc_host *h, char *err,
                       size_t errlen) {
  const char *nl = strchr(out, '\n');
  if (strncmp(out, "SSH_CONNECTION=", 15) != 0 || nl == NULL) {
    snprintf(err, errlen, "unexpected output from the remote shell");
    return -1;
  }
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)(nl - out), out);
  if (dcc_parse_ip_json(nl + 1, h, err, errlen) != 0)
    return -1;
  h->mgmt = server_ip(line);
  h->mgmt_if = h->mgmt ? dcc_find_v4_iface(h, h->mgmt) : -1;
  return 0;
}
