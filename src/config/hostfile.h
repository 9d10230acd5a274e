/* MLX's ring hostfile and addresses (src/config/hostfile.c).
 *
 * The hostfile is a JSON list with one entry per rank, each a list of
 * "ip:port" strings (IPv4 "10.0.0.1:5000" or IPv6 "[fe80::1]:5000"):
 *   [["10.0.0.1:5000", "10.0.1.1:5000"], ["10.0.0.2:5000", "10.0.1.2:5000"]]
 * k addresses per rank mean k parallel connections between neighbours; every
 * rank must list the same number. JSON is parsed by Debian's libcjson,
 * loaded at run time (dlopen), so the library links only libc. */
#ifndef DC_CONFIG_HOSTFILE_H
#define DC_CONFIG_HOSTFILE_H

#include <stddef.h>
#include <sys/socket.h>

#include "distcomm.h"

typedef struct dc_addr {
  struct sockaddr_storage sa; /* numeric address, port set */
  socklen_t salen;
  char text[64]; /* as written: "10.0.0.1:5000", "[::1]:5000" */
} dc_addr;

/* Addresses per rank: each is a listener that set-up polls and a ring of
 * its own; past this a hostfile is refused rather than half served. */
#define DC_HOSTFILE_MAX_ADDRS 64

typedef struct dc_hostfile {
  int nranks;
  int naddrs;     /* addresses per rank (same for every rank) */
  dc_addr *addrs; /* nranks * naddrs; rank r's i-th at [r * naddrs + i] */
} dc_hostfile;

/* Parse "ip:port" / "[ipv6]:port" (numeric only; port 1..65535; port 0 only
 * when allow_port0). On failure err (errlen bytes) says what is wrong. */
dc_status dc_addr_parse(const char *text, int allow_port0, dc_addr *out,
                        char *err, size_t errlen);

/* Parse hostfile text of len bytes (need not be NUL-terminated; never read
 * past len). DC_ERR_CONFIG with a one-line reason in err, e.g.
 * "hostfile: entry 2 is not a list of \"ip:port\" strings";
 * DC_ERR_UNAVAILABLE when libcjson cannot be loaded. */
dc_status dc_hostfile_parse(const char *text, size_t len, dc_hostfile *out,
                            char *err, size_t errlen);

/* Read and parse a file: DC_ERR_CONFIG naming the path when it cannot be
 * read ("MLX_HOSTFILE /x/h.json: No such file or directory"). */
dc_status dc_hostfile_load(const char *path, dc_hostfile *out, char *err,
                           size_t errlen);

void dc_hostfile_free(dc_hostfile *hf);

/* A configuration file's whole text (malloc'd, not NUL-terminated; reading
 * stops a little past 16 MiB, which the parsers refuse). Errors name `what`,
 * e.g. "MLX_HOSTFILE /x/h.json: No such file or directory". */
dc_status dc_config_read(const char *what, const char *path, char **text,
                         size_t *len, char *err, size_t errlen);

/* "VAR path" with the path escaped and shortened, for messages. */
void dc_config_name(char *what, size_t n, const char *var, const char *path);

/* Parse an environment integer such as MLX_RANK: DC_ERR_CONFIG with
 * "MLX_RANK='abc' is not a non-negative integer" when malformed. */
dc_status dc_env_parse_int(const char *name, const char *value, long *out,
                           char *err, size_t errlen);

#endif
