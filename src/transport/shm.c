/* Shared-memory segments and pipes (see shm.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/shm.h"
#include "transport/sock.h"

#include "config/env.h"

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t dc_host_key(void) {
  uint64_t h = 1469598103934665603ull;
  char boot[64] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f))
      boot[0] = '\0';
    fclose(f);
  }
  h = mix(h, boot, strlen(boot));
  struct stat st;
  if (stat("/proc/self/ns/net", &st) == 0)
    h = mix(h, &st.st_ino, sizeof st.st_ino);
  uid_t uid = getuid();
  return mix(h, &uid, sizeof uid);
}

int dc_shm_enabled(void) { return dc_env_flag(DC_ENV_SHM); }

int dc_cma_enabled(void) {
  return dc_env_flag(DC_ENV_CMA) != 0; /* on or auto */
}

int dc_cma_forced(void) { return dc_env_flag(DC_ENV_CMA) == 1; }

ssize_t dc_cma_read(int pid, void *dst, uint64_t src, size_t len) {
  struct iovec l = {dst, len}, r = {(void *)(uintptr_t)src, len};
  return process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
}

/* ---- names and credentials ------------------------------------------- */

static dc_status random_hex(char *out, size_t nbytes) {
  unsigned char r[32];
  if (nbytes > sizeof r || getrandom(r, nbytes, 0) != (ssize_t)nbytes)
    return DC_ERR_SYSTEM;
  for (size_t i = 0; i < nbytes; i++)
    snprintf(out + 2 * i, 3, "%02x", r[i]);
  return DC_OK;
}

dc_status dc_shm_new_name(char out[DC_SHM_NAME_BYTES]) {
  memcpy(out, DC_SHM_PREFIX, sizeof DC_SHM_PREFIX);
  return random_hex(out + sizeof DC_SHM_PREFIX - 1, 16);
}

int dc_shm_name_ok(const char *name, size_t cap) {
  size_t n = strnlen(name, cap), k = sizeof DC_SHM_PREFIX - 1;
  if (n == cap || n <= k || strncmp(name, DC_SHM_PREFIX, k) != 0)
    return 0;
  for (size_t i = k; i < n; i++)
    if (!(name[i] == '-' || name[i] == '_' ||
          (name[i] >= '0' && name[i] <= '9') ||
          (name[i] >= 'a' && name[i] <= 'z') ||
          (name[i] >= 'A' && name[i] <= 'Z')))
      return 0;
  return 1;
}

_Static_assert(DC_SHM_NAME_BYTES < sizeof(((struct sockaddr_un *)0)->sun_path),
               "a name fits an abstract socket address");

int dc_cred_listen(char name[DC_SHM_NAME_BYTES]) {
  dc_addr a;
  if (dc_shm_new_name(name) != DC_OK)
    return -1;
  dc_sock_abstract(name, DC_SHM_NAME_BYTES - 1, &a);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  /* Nobody accepts: every same-host peer's probe stays in the backlog
   * until set-up closes fd, so it must hold them all (the kernel caps it
   * at net.core.somaxconn, 4096 by default). */
  if (fd >= 0 && (bind(fd, (struct sockaddr *)&a.sa, a.salen) != 0 ||
                  listen(fd, SOMAXCONN) != 0)) {
    close(fd);
    fd = -1;
  }
  if (fd < 0)
    name[0] = '\0';
  return fd;
}

pid_t dc_cred_pid(const char *name, size_t cap) {
  dc_addr a;
  if (!dc_shm_name_ok(name, cap))
    return -1;
  dc_sock_abstract(name, DC_SHM_NAME_BYTES - 1, &a);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  pid_t pid = -1;
  /* A Unix connect completes in the listener's backlog: its credentials
   * (as of listen()) are there at once, no accept needed. */
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a.sa, a.salen) == 0)
    pid = dc_sock_peer_pid(fd);
  if (fd >= 0)
    close(fd);
  return pid;
}

size_t dc_shm_pipes_budget(size_t npipes) {
  if (npipes <= DC_SHM_PIPES_FULL)
    return DC_SHM_PIPES_BUDGET;
  return (size_t)DC_SHM_PIPES_BUDGET * DC_SHM_PIPES_FULL / npipes;
}

size_t dc_pipe_cap(size_t npipes) {
  size_t cap = DC_PIPE_BYTES, budget = dc_shm_pipes_budget(npipes);
  while (cap > DC_PIPE_MIN_BYTES && npipes * cap > budget)
    cap /= 2;
  return cap;
}

static size_t stride(size_t npipes) {
  return offsetof(dc_pipe, data) + dc_pipe_cap(npipes);
}

static size_t seg_bytes(size_t npipes) { return npipes * stride(npipes); }

static dc_status map(dc_shm_seg *s, int fd, size_t bytes, char *err,
                     size_t errlen) {
  s->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    snprintf(err, errlen, "mmap %s: %s", s->name, strerror(errno));
    return DC_ERR_SYSTEM;
  }
  s->bytes = bytes;
  return DC_OK;
}

dc_status dc_shm_create(dc_shm_seg *s, const char *name, size_t npipes,
                        char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(err, errlen, "shm_open %s: %s", name, strerror(errno));
    return DC_ERR_SYSTEM;
  }
  s->owner = 1;
  /* Reserve every page now: a sparse segment on a full tmpfs (a
   * container's small /dev/shm) would kill us with SIGBUS mid-transfer. */
  int e = posix_fallocate(fd, 0, (off_t)seg_bytes(npipes));
  if (e != 0) {
    snprintf(err, errlen, "reserving %zu bytes for %s: %s", seg_bytes(npipes),
             name, strerror(e));
    close(fd);
    dc_shm_close(s);
    return DC_ERR_SYSTEM;
  }
  /* A new file is zero-filled, so every pipe starts empty and nothing is
   * written to it: a write per pipe cost a page each (with 255 peers, a
   * tenth of the job's set-up CPU: bench/scale/many-ranks.md). */
  dc_status st = map(s, fd, seg_bytes(npipes), err, errlen);
  if (st != DC_OK) {
    dc_shm_close(s);
    return st;
  }
  s->stride = stride(npipes);
  s->cap = dc_pipe_cap(npipes);
  return DC_OK;
}

dc_status dc_shm_attach(dc_shm_seg *s, const char *name, size_t npipes,
                        char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (!dc_shm_name_ok(name, sizeof s->name)) {
    snprintf(err, errlen, "a segment name that is not distcomm's");
    return DC_ERR_SYSTEM;
  }
  snprintf(s->name, sizeof s->name, "%s", name);
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "shm_open %s: %s", name, strerror(errno));
    return DC_ERR_SYSTEM;
  }
  struct stat st;
  const char *bad = fstat(fd, &st) != 0       ? "cannot be checked"
                    : st.st_uid != geteuid()  ? "is owned by another user"
                    : (st.st_mode & 077) != 0 ? "is open to other users"
                    : (size_t)st.st_size != seg_bytes(npipes)
                        ? "has the wrong size"
                        : NULL;
  if (bad) {
    snprintf(err, errlen, "%s %s", name, bad);
    close(fd);
    return DC_ERR_SYSTEM;
  }
  s->stride = stride(npipes);
  s->cap = dc_pipe_cap(npipes);
  return map(s, fd, seg_bytes(npipes), err, errlen);
}

void dc_shm_unlink(dc_shm_seg *s) {
  if (s->owner && !s->unlinked && s->name[0])
    shm_unlink(s->name);
  s->unlinked = 1;
}

void dc_shm_close(dc_shm_seg *s) {
  dc_shm_unlink(s);
  if (s->base)
    munmap(s->base, s->bytes);
  s->base = NULL;
}

/* Copy n bytes into the ring at position pos, wrapping. */
static void put(dc_pipe *p, size_t cap, uint64_t pos, const void *src,
                size_t n) {
  size_t at = (size_t)pos & (cap - 1), first = cap - at;
  if (first > n)
    first = n;
  memcpy(p->data + at, src, first);
  memcpy(p->data, (const char *)src + first, n - first);
}

static size_t wanted(const struct iovec *iov, int n) {
  size_t w = 0;
  for (int i = 0; i < n; i++)
    w += iov[i].iov_len;
  return w;
}

size_t dc_pipe_write(dc_pipe *p, size_t cap, uint64_t *tail,
                     const struct iovec *iov, int n) {
  uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);
  uint64_t used = head - *tail;
  size_t done = 0;
  if (used > cap || cap - used < wanted(iov, n)) { /* looks full: see what the
                                                     consumer freed */
    *tail = atomic_load_explicit(&p->tail, memory_order_acquire);
    used = head - *tail;
  }
  if (used > cap) /* the peer wrote a tail (or head) out of range */
    return DC_PIPE_BAD;
  size_t room = cap - (size_t)used;
  for (int i = 0; i < n && room > 0; i++) {
    size_t k = iov[i].iov_len < room ? iov[i].iov_len : room;
    put(p, cap, head + done, iov[i].iov_base, k);
    done += k;
    room -= k;
  }
  if (done)
    atomic_store_explicit(&p->head, head + done, memory_order_release);
  return done;
}

size_t dc_pipe_peek(dc_pipe *p, size_t cap, const unsigned char **at) {
  uint64_t tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
  size_t off = (size_t)tail & (cap - 1);
  size_t avail = (size_t)(head - tail);
  *at = p->data + off;
  return avail < cap - off ? avail : cap - off;
}

void dc_pipe_consume(dc_pipe *p, size_t n) {
  uint64_t tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
  atomic_store_explicit(&p->tail, tail + n, memory_order_release);
}

size_t dc_pipe_read(dc_pipe *p, size_t cap, void *dst, size_t n) {
  size_t done = 0;
  while (done < n) { /* at most two contiguous pieces */
    const unsigned char *at;
    size_t k = dc_pipe_peek(p, cap, &at);
    if (k == 0)
      break;
    if (k > n - done)
      k = n - done;
    memcpy((char *)dst + done, at, k);
    dc_pipe_consume(p, k);
    done += k;
  }
  return done;
}

size_t dc_pipe_look(dc_pipe *p, size_t cap, void *dst, size_t n) {
  uint64_t tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
  if (head - tail < n)
    return 0;
  size_t at = (size_t)tail & (cap - 1), first = cap - at;
  if (first > n)
    first = n;
  memcpy(dst, p->data + at, first);
  memcpy((char *)dst + first, p->data, n - first);
  return n;
}

int dc_mbox_put(dc_pipe *p, uint64_t *sent, uint64_t *taken, const void *hdr,
                const void *data, size_t len) {
  if (*sent - *taken >= DC_MBOX_SLOTS) { /* looks full: ask the consumer */
    *taken = atomic_load_explicit(&p->taken, memory_order_acquire);
    if (*sent - *taken >= DC_MBOX_SLOTS)
      return 0;
  }
  dc_mbox_slot *m = &p->mbox[*sent & (DC_MBOX_SLOTS - 1)];
  memcpy(m->hdr, hdr, DC_MBOX_HDR);
  if (len)
    memcpy(m->data, data, len);
  atomic_store_explicit(&m->flag, (uint32_t)(++*sent), memory_order_release);
  return 1;
}
