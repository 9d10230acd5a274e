/* libFuzzer target: the ring hostfile parser (src/config/hostfile.c with
 * libcjson) and the "ip:port" / integer parsers under it.
 *
 * libcjson is loaded at run time and not instrumented, so ASan alone would
 * not see it read past the text it is given: the input is placed right
 * before a page that cannot be read, and any over-read faults. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/hostfile.h"

#define ROOM ((size_t)1 << 20) /* inputs up to 1 MiB */

/* ROOM readable bytes followed by a guard page. */
static unsigned char *room(void) {
  static unsigned char *base;
  if (!base) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    base = mmap(NULL, ROOM + page, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect(base + ROOM, page, PROT_NONE) != 0)
      abort();
  }
  return base;
}

/* A message is one NUL-terminated line. */
static void check_err(const char *err, size_t cap) {
  size_t n = strnlen(err, cap);
  if (n == 0 || n == cap || memchr(err, '\n', n))
    abort();
}

/* Every address kept must parse again to the same socket address. */
static void check_hostfile(const dc_hostfile *hf) {
  if (hf->nranks < 1 || hf->naddrs < 1 || !hf->addrs)
    abort();
  for (int i = 0; i < hf->nranks * hf->naddrs; i++) {
    const dc_addr *a = &hf->addrs[i];
    dc_addr b;
    char err[256];
    if (strnlen(a->text, sizeof a->text) == sizeof a->text ||
        dc_addr_parse(a->text, 0, &b, err, sizeof err) != DC_OK ||
        b.salen != a->salen || memcmp(&b.sa, &a->sa, a->salen) != 0)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > ROOM)
    return 0;
  char *text = (char *)room() + ROOM - size; /* ends at the guard page */
  memcpy(text, data, size);
  dc_hostfile hf;
  char err[512];
  if (dc_hostfile_parse(text, size, &hf, err, sizeof err) == DC_OK) {
    check_hostfile(&hf);
    dc_hostfile_free(&hf);
  } else {
    check_err(err, sizeof err);
  }
  /* The same bytes as one address and as an integer (NUL-terminated). */
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  dc_addr a;
  long v;
  if (dc_addr_parse(s, size & 1, &a, err, sizeof err) != DC_OK)
    check_err(err, sizeof err);
  if (dc_env_parse_int("MLX_RANK", s, &v, err, sizeof err) != DC_OK)
    check_err(err, sizeof err);
  else if (v < 0)
    abort();
  free(s);
  return 0;
}
