#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hosts.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "util.h"

static bool is_local_name(const char *h) {
  return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 ||
         strcmp(h, "::1") == 0;
}

static bool is_ip(const char *s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* A host name in --hosts becomes its address, as the ring needs one. */
static char *resolve(const char *ssh) {
  const char *at = strrchr(ssh, '@');
  const char *name = at ? at + 1 : ssh;
  if (is_ip(name))
    return strdup(name);
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM},
                  *res;
  int rc = getaddrinfo(name, NULL, &hints, &res);
  if (rc != 0) {
    dcl_error("host '%s': cannot find its address (%s); give an IP address, or "
              "\"ips\" in the hostfile",
              ssh, gai_strerror(rc));
    return NULL;
  }
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, text,
            sizeof text);
  freeaddrinfo(res);
  return strdup(text);
}

static int add_rank(struct dcl_plan *p, const char *ssh, char **ips,
                    size_t n_ips, const char *rdma) {
  struct dcl_host *grown =
      realloc(p->ranks, (size_t)(p->nranks + 1) * sizeof *grown);
  if (grown == NULL)
    return -1;
  p->ranks = grown;
  struct dcl_host *h = &p->ranks[p->nranks++];
  h->ssh = strdup(ssh);
  h->local = is_local_name(ssh);
  h->ips = calloc(n_ips ? n_ips : 1, sizeof *h->ips);
  h->n_ips = n_ips;
  h->rdma = rdma ? strdup(rdma) : NULL;
  if (h->ssh == NULL || h->ips == NULL || (rdma && h->rdma == NULL))
    return -1;
  for (size_t i = 0; i < n_ips; i++)
    if ((h->ips[i] = strdup(ips[i])) == NULL)
      return -1;
  return 0;
}

/* One host entry, repeated -n times; no "ips": the ssh name's address. */
static int add_host(struct dcl_plan *p, const char *ssh, char **ips,
                    size_t n_ips, long rep, const char *rdma) {
  char *own = NULL;
  if (n_ips == 0 && p->resolve) {
    if ((own = resolve(ssh)) == NULL)
      return -1;
    ips = &own;
    n_ips = 1;
  }
  int rc = 0;
  for (long k = 0; k < rep && rc == 0; k++)
    if (p->nranks >= DCL_MAX_RANKS || add_rank(p, ssh, ips, n_ips, rdma) != 0) {
      dcl_error(p->nranks >= DCL_MAX_RANKS ? "too many ranks (at most %d)"
                                           : "out of memory (%d)",
                DCL_MAX_RANKS);
      rc = -1;
    }
  free(own);
  return rc;
}

/* ssh would take a name starting with '-' for an option (-oProxyCommand=...).
 */
static bool option_like(const char *ssh) {
  if (ssh[0] != '-')
    return false;
  dcl_error("--hosts: host name '%s' starts with '-'", ssh);
  return true;
}

static int from_list(const char *list, long rep, struct dcl_plan *p) {
  char *copy = strdup(list), *save = NULL;
  int rc = copy == NULL ? -1 : 0;
  if (list[0] == '\0' || list[0] == ',' || strstr(list, ",,") ||
      list[strlen(list) - 1] == ',') {
    dcl_error("--hosts '%s': a host name is empty", list);
    rc = -1;
  }
  for (char *t = rc ? NULL : strtok_r(copy, ",", &save); t != NULL && rc == 0;
       t = strtok_r(NULL, ",", &save))
    rc = option_like(t) ? -1 : add_host(p, t, NULL, 0, rep, NULL);
  free(copy);
  return rc;
}

/* A list of strings (the "ips" of a host, the "envs"); absent or null is an
 * empty list. The strings stay owned by the parsed tree. */
static int strings(const char *path, const char *what, const cJSON *v,
                   char ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (v == NULL || cJSON_IsNull(v))
    return 0;
  if (!cJSON_IsArray(v))
    goto bad;
  *out = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof **out);
  const cJSON *item;
  cJSON_ArrayForEach(item, v) {
    if (*out == NULL)
      break;
    if (!cJSON_IsString(item))
      goto bad;
    (*out)[(*n)++] = item->valuestring;
  }
  return *out != NULL ? 0 : -1;
bad:
  free(*out);
  *out = NULL;
  *n = 0;
  dcl_error("--hostfile %s: %s must be a list of strings", path, what);
  return -1;
}

/* "ips" go into the ring hostfile as they are: addresses only. */
static int check_ips(const char *path, const char *what, char **ips, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_ip(ips[i])) {
      dcl_error("--hostfile %s: %s: '%s' is not an IPv4 or IPv6 address", path,
                what, ips[i]);
      return -1;
    }
  return 0;
}

/* MLX's mesh hostfile: "rdma" is the host's row of the device matrix (a
 * list: null, a name, or a list of names per host); kept as JSON text. */
static int rdma_row(const char *path, size_t i, const cJSON *host, char **out) {
  const cJSON *row = cJSON_GetObjectItemCaseSensitive(host, "rdma");
  *out = NULL;
  if (row == NULL || cJSON_IsNull(row))
    return 0;
  if (!cJSON_IsArray(row)) {
    dcl_error("--hostfile %s: \"rdma\" of host %zu must be a list (one entry "
              "per host)",
              path, i);
    return -1;
  }
  *out = cJSON_PrintUnformatted(row);
  return *out != NULL ? 0 : -1;
}

static int from_hosts(const char *path, const cJSON *hosts, long rep,
                      struct dcl_plan *p) {
  if (!cJSON_IsArray(hosts) || cJSON_GetArraySize(hosts) == 0) {
    dcl_error("--hostfile %s: expected a list of hosts ({\"ssh\": ..., "
              "\"ips\": [...]})",
              path);
    return -1;
  }
  size_t i = 0;
  const cJSON *host;
  cJSON_ArrayForEach(host, hosts) {
    const cJSON *ssh = cJSON_GetObjectItemCaseSensitive(host, "ssh");
    char what[64], **ips;
    size_t n_ips;
    if (!cJSON_IsString(ssh) || ssh->valuestring[0] == '\0') {
      char *text = cJSON_PrintUnformatted(host);
      dcl_error("--hostfile %s: host %zu has no \"ssh\" name: %.200s; "
                "--hostfile wants a hosts file, [{\"ssh\": NAME, \"ips\": "
                "[IP, ...]}, ...]%s",
                path, i, text ? text : "?",
                cJSON_IsArray(host) ? " (a list of \"ip:port\" lists is an "
                                      "address file, which ranks read from "
                                      "MLX_HOSTFILE)"
                                    : "");
      free(text);
      return -1;
    }
    if (ssh->valuestring[0] == '-') { /* ssh would take it for an option */
      dcl_error("--hostfile %s: host %zu: host name '%s' starts with '-'", path,
                i, ssh->valuestring);
      return -1;
    }
    snprintf(what, sizeof what, "\"ips\" of host %zu", i++);
    int rc = strings(path, what, cJSON_GetObjectItemCaseSensitive(host, "ips"),
                     &ips, &n_ips);
    rc = rc == 0 ? check_ips(path, what, ips, n_ips) : -1;
    char *rdma = NULL;
    rc = rc == 0 ? rdma_row(path, i - 1, host, &rdma) : -1;
    rc = rc == 0 ? add_host(p, ssh->valuestring, ips, n_ips, rep, rdma) : -1;
    free(rdma);
    free(ips);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* The "envs" and "backend" of the object form, kept for the launch. */
static int from_object(const char *path, const cJSON *root, long rep,
                       struct dcl_plan *p) {
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "backend");
  char **envs;
  size_t n;
  if (cJSON_IsString(b) && b->valuestring[0] != '\0')
    p->backend = strdup(b->valuestring);
  if (p->backend != NULL && strcmp(p->backend, "mpi") == 0 && !p->backend_set)
    p->resolve = false; /* mpirun's hosts: names as they are */
  if (strings(path, "\"envs\"", cJSON_GetObjectItemCaseSensitive(root, "envs"),
              &envs, &n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (strchr(envs[i], '=') == NULL) {
      dcl_error("--hostfile %s: \"envs\" entry '%s' is not of the form K=V",
                path, envs[i]);
      free(envs);
      return -1;
    }
    envs[i] = strdup(envs[i]);
  }
  p->envs = envs;
  p->n_envs = n;
  return from_hosts(path, cJSON_GetObjectItemCaseSensitive(root, "hosts"), rep,
                    p);
}

static int from_text(const char *path, const char *text, long rep,
                     struct dcl_plan *p) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
  if (root == NULL) {
    dcl_error("--hostfile %s: not MLX's JSON hostfile (bad JSON at byte %ld)",
              path, end != NULL ? (long)(end - text) : 0L);
    return -1;
  }
  int rc = cJSON_IsObject(root) ? from_object(path, root, rep, p)
                                : from_hosts(path, root, rep, p);
  cJSON_Delete(root);
  return rc;
}

static int from_file(const char *path, long rep, struct dcl_plan *p) {
  char *text = dcl_read_hostfile(path);
  if (text == NULL)
    return -1;
  int rc = from_text(path, text, rep, p);
  free(text);
  return rc;
}

int dcl_plan_hosts(const struct dcl_options *o, const char *text,
                   struct dcl_plan *p) {
  memset(p, 0, sizeof *p);
  return text ? from_text(o->hostfile, text, 1, p) : from_list(o->hosts, 1, p);
}

int dcl_plan_build(const struct dcl_options *o, struct dcl_plan *p) {
  memset(p, 0, sizeof *p);
  p->resolve = true;
  p->backend_set = o->backend_set;
  int rc = o->hostfile ? from_file(o->hostfile, o->nranks, p)
                       : from_list(o->hosts, o->nranks, p);
  if (rc != 0)
    return -1;
  size_t locals = 0;
  for (long r = 0; r < p->nranks; r++)
    locals += p->ranks[r].local;
  p->all_local = locals == (size_t)p->nranks;
  if (locals > 0 && !p->all_local && p->resolve) {
    dcl_error(
        "127.0.0.1/localhost cannot be mixed with other hosts: remote ranks "
        "could not reach it; give this machine's address instead");
    return -1;
  }
  return 0;
}

static bool env_in(const char *const *envs, size_t n, const char *name) {
  size_t len = strlen(name);
  for (size_t i = 0; i < n; i++)
    if (strncmp(envs[i], name, len) == 0 && envs[i][len] == '=')
      return true;
  return false;
}

/* [[null,"lo",...],...]: every pair of local ranks over the loopback. */
static char *loopback_matrix(long n) {
  size_t cap = (size_t)n * (size_t)n * 6 + (size_t)n * 3 + 32, used = 0;
  char *m = malloc(cap);
  if (m == NULL)
    return NULL;
  used += (size_t)snprintf(m, cap, "MLX_IBV_DEVICES=[");
  for (long r = 0; r < n; r++)
    for (long q = 0; q < n; q++)
      used +=
          (size_t)snprintf(m + used, cap - used, "%s%s%s%s", q ? "" : "[",
                           q == r ? "null" : "\"lo\"", q + 1 < n ? "," : "]",
                           q + 1 < n || r + 1 == n ? "" : ",");
  snprintf(m + used, cap - used, "]");
  return m;
}

/* The hosts' "rdma" rows, in host order, as one matrix. */
static char *rdma_matrix(const struct dcl_options *o,
                         const struct dcl_plan *p) {
  size_t cap = 32;
  for (long r = 0; r < p->nranks; r++) {
    const struct dcl_host *h = &p->ranks[r];
    if (h->rdma == NULL) {
      dcl_error(
          "--backend %s: host %ld (%s) has no \"rdma\" row: write the hostfile "
          "with distcomm-config --backend mesh, or give --env "
          "MLX_IBV_DEVICES=FILE",
          o->backend, r, h->ssh);
      return NULL;
    }
    cJSON *row = cJSON_Parse(h->rdma);
    int len = row ? cJSON_GetArraySize(row) : -1;
    cJSON_Delete(row);
    if (len != p->nranks) {
      dcl_error("--backend %s: the \"rdma\" row of host %ld (%s) has %d "
                "entries for %ld "
                "ranks (the mesh runs one rank per host)",
                o->backend, r, h->ssh, len, p->nranks);
      return NULL;
    }
    cap += strlen(h->rdma) + 1;
  }
  char *m = malloc(cap + sizeof "MLX_IBV_DEVICES=");
  if (m == NULL)
    return NULL;
  size_t used = (size_t)sprintf(m, "MLX_IBV_DEVICES=[");
  for (long r = 0; r < p->nranks; r++)
    used += (size_t)sprintf(m + used, "%s%s", r ? "," : "", p->ranks[r].rdma);
  strcpy(m + used, "]");
  return m;
}

int dcl_plan_mesh(const struct dcl_options *o, struct dcl_plan *p) {
  if (strcmp(o->backend, "jaccl-ring") == 0) {
    if ((p->mesh_envs[p->n_mesh_envs] = strdup("MLX_JACCL_RING=1")) == NULL)
      return -1;
    p->n_mesh_envs++;
  }
  if (env_in(o->envs, o->n_envs, "MLX_IBV_DEVICES") ||
      env_in((const char *const *)p->envs, p->n_envs, "MLX_IBV_DEVICES"))
    return 0; /* the user's own matrix */
  bool rows = false;
  for (long r = 0; r < p->nranks; r++)
    rows = rows || p->ranks[r].rdma != NULL;
  char *m = p->nranks == 0          ? loopback_matrix(o->nranks)
            : !rows && p->all_local ? loopback_matrix(p->nranks)
                                    : rdma_matrix(o, p);
  if (m == NULL)
    return -1;
  p->mesh_envs[p->n_mesh_envs++] = m;
  return 0;
}

void dcl_plan_free(struct dcl_plan *p) {
  for (size_t i = 0; i < p->n_mesh_envs; i++)
    free(p->mesh_envs[i]);
  for (long r = 0; r < p->nranks; r++) {
    free(p->ranks[r].rdma);
    for (size_t i = 0; i < p->ranks[r].n_ips; i++)
      free(p->ranks[r].ips[i]);
    free(p->ranks[r].ips);
    free(p->ranks[r].ssh);
  }
  for (size_t i = 0; i < p->n_envs; i++)
    free(p->envs[i]);
  free(p->envs);
  free(p->ranks);
  free(p->backend);
  memset(p, 0, sizeof *p);
}
