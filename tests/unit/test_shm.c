/* Shared-memory pipes and segments: wrap-around, flow control, names that
 * cannot collide, permissions that keep other users out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "transport/shm.h"

static void name_for(char *out, size_t n, const char *what) {
  snprintf(out, n, "/distcomm-test-%ld-%s", (long)getpid(), what);
}

static dc_pipe *fresh_pipe(void) {
  dc_pipe *p = aligned_alloc(64, sizeof *p);
  assert_non_null(p);
  atomic_store(&p->head, 0);
  atomic_store(&p->tail, 0);
  return p;
}

/* Bytes written in odd-sized pieces come out the same, across many wraps. */
static void test_pipe_stream_wraps(void **state) {
  (void)state;
  dc_pipe *p = fresh_pipe();
  unsigned char *out = malloc(3 * DC_PIPE_BYTES), *in = malloc(3 * DC_PIPE_BYTES);
  for (size_t i = 0; i < 3 * DC_PIPE_BYTES; i++)
    out[i] = (unsigned char)(i * 7 + i / 251);
  size_t w = 0, r = 0, piece = 1;
  uint64_t tail = 0;
  while (r < 3 * DC_PIPE_BYTES) {
    size_t want = 3 * DC_PIPE_BYTES - w < piece ? 3 * DC_PIPE_BYTES - w : piece;
    struct iovec iov = {out + w, want};
    w += dc_pipe_write(p, &tail, &iov, 1);
    r += dc_pipe_read(p, in + r, piece * 3 / 2 + 1);
    piece = piece * 3 % 100003 + 1;
  }
  assert_memory_equal(in, out, 3 * DC_PIPE_BYTES);
  free(out);
  free(in);
  free(p);
}

/* A full pipe takes nothing more; an empty one gives nothing. */
static void test_pipe_flow_control(void **state) {
  (void)state;
  dc_pipe *p = fresh_pipe();
  static unsigned char big[DC_PIPE_BYTES + 100];
  struct iovec iov[2] = {{big, 10}, {big, sizeof big}};
  uint64_t tail = 0;
  assert_int_equal(dc_pipe_write(p, &tail, iov, 2), DC_PIPE_BYTES);
  assert_int_equal(dc_pipe_write(p, &tail, iov, 1), 0);
  unsigned char b[16];
  assert_int_equal(dc_pipe_read(p, b, 16), 16);
  assert_int_equal(dc_pipe_write(p, &tail, iov, 2), 16); /* re-reads tail */
  const unsigned char *at;
  assert_int_equal(dc_pipe_peek(p, &at), DC_PIPE_BYTES - 16); /* up to the end */
  dc_pipe_consume(p, DC_PIPE_BYTES - 16);
  assert_int_equal(dc_pipe_peek(p, &at), 16); /* the wrapped part */
  assert_ptr_equal(at, p->data);
  dc_pipe_consume(p, 16);
  assert_int_equal(dc_pipe_read(p, b, 16), 0);
  free(p);
}

/* Segments are private to the user (0600) and names never collide. */
static void test_segment_mode_and_exclusive(void **state) {
  (void)state;
  char name[96], err[160];
  name_for(name, sizeof name, "mode");
  dc_shm_seg a, b;
  assert_int_equal(dc_shm_create(&a, name, 2, err, sizeof err), DC_OK);
  struct stat st;
  char path[128];
  snprintf(path, sizeof path, "/dev/shm%s", name);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(dc_shm_create(&b, name, 2, err, sizeof err), DC_ERR_SYSTEM);
  assert_non_null(strstr(err, "exists"));
  /* attaching checks the size, so a stray segment is never misread */
  assert_int_equal(dc_shm_attach(&b, name, 3, err, sizeof err), DC_ERR_SYSTEM);
  assert_int_equal(dc_shm_attach(&b, name, 2, err, sizeof err), DC_OK);
  dc_pipe *pa = dc_shm_pipe(&a, 1), *pb = dc_shm_pipe(&b, 1);
  struct iovec iov = {"hello", 5};
  uint64_t tail = 0;
  assert_int_equal(dc_pipe_write(pa, &tail, &iov, 1), 5);
  char got[8] = "";
  assert_int_equal(dc_pipe_read(pb, got, 8), 5);
  assert_string_equal(got, "hello");
  dc_shm_close(&b);
  dc_shm_close(&a); /* the owner unlinks */
  assert_int_not_equal(stat(path, &st), 0);
}

/* Another user cannot open a segment while it exists. */
static void test_other_user_refused(void **state) {
  (void)state;
  if (getuid() != 0)
    skip(); /* switching users needs root */
  char name[96], err[160];
  name_for(name, sizeof name, "perm");
  dc_shm_seg a;
  assert_int_equal(dc_shm_create(&a, name, 1, err, sizeof err), DC_OK);
  pid_t pid = fork();
  if (pid == 0) {
    dc_shm_seg b;
    if (setgid(65534) != 0 || setuid(65534) != 0)
      _exit(3);
    _exit(dc_shm_attach(&b, name, 1, err, sizeof err) == DC_OK ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  dc_shm_close(&a);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* Processes of one host and user agree on the key; DISTCOMM_SHM=0 disables. */
static void test_host_key_and_switch(void **state) {
  (void)state;
  assert_true(dc_host_key() == dc_host_key());
  setenv("DISTCOMM_SHM", "0", 1);
  assert_false(dc_shm_enabled());
  setenv("DISTCOMM_SHM", "1", 1);
  assert_true(dc_shm_enabled());
  unsetenv("DISTCOMM_SHM");
  assert_true(dc_shm_enabled());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pipe_stream_wraps),
      cmocka_unit_test(test_pipe_flow_control),
      cmocka_unit_test(test_segment_mode_and_exclusive),
      cmocka_unit_test(test_other_user_refused),
      cmocka_unit_test(test_host_key_and_switch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
