/* Same-host dialing: a peer's Unix twin listens before its TCP port, so a
 * dialer that reaches the port must not keep TCP when the twin came up
 * between its two tries (CI saw a same-host pair on TCP). connect() is
 * wrapped (-Wl,--wrap=connect) so the twin can come up at that moment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/group.h"
#include "transport/sock.h"

int __real_connect(int fd, const struct sockaddr *sa, socklen_t len);

/* Set: the next TCP connect first starts listening on this twin. */
static const dc_addr *raise_twin;
static int twin_fd = -1;

int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len) {
  if (raise_twin && sa->sa_family != AF_UNIX) {
    twin_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(twin_fd >= 0);
    assert_int_equal(bind(twin_fd, (const struct sockaddr *)&raise_twin->sa,
                          raise_twin->salen),
                     0);
    assert_int_equal(listen(twin_fd, 8), 0);
    raise_twin = NULL;
  }
  return __real_connect(fd, sa, len);
}

/* A TCP listener on 127.0.0.1 (port chosen) and its twin's address. */
static int tcp_listener(dc_addr *a, dc_addr *twin) {
  char err[200];
  int fd;
  assert_int_equal(dc_addr_parse("127.0.0.1:0", 1, a, err, sizeof err), DC_OK);
  assert_int_equal(dc_sock_listen(a, &fd, err, sizeof err), DC_OK);
  dc_sock_unix_twin(a, twin);
  return fd;
}

static int family(int fd) {
  struct sockaddr_storage ss;
  socklen_t n = sizeof ss;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &n), 0);
  return ss.ss_family;
}

/* The twin comes up after the dialer's Unix try and before its TCP try:
 * the pair still ends on the Unix socket. */
static void test_twin_up_between_tries(void **state) {
  (void)state;
  dc_addr a, twin;
  char err[200];
  int lfd = tcp_listener(&a, &twin), fd, via_twin = -1;
  raise_twin = &twin;
  assert_int_equal(dc_sock_connect_via(&twin, &a, dc_now() + 5, &fd, &via_twin,
                                       err, sizeof err),
                   DC_OK);
  assert_null(raise_twin); /* the wrap did raise it */
  assert_int_equal(via_twin, 1);
  assert_int_equal(family(fd), AF_UNIX);
  close(fd);
  close(twin_fd);
  close(lfd);
}

/* No twin at all (a relay or tunnel between us): TCP, never a failure. */
static void test_no_twin_keeps_tcp(void **state) {
  (void)state;
  dc_addr a, twin;
  char err[200];
  int lfd = tcp_listener(&a, &twin), fd, via_twin = -1;
  assert_int_equal(dc_sock_connect_via(&twin, &a, dc_now() + 5, &fd, &via_twin,
                                       err, sizeof err),
                   DC_OK);
  assert_int_equal(via_twin, 0);
  assert_int_equal(family(fd), AF_INET);
  close(fd);
  close(lfd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_twin_up_between_tries),
      cmocka_unit_test(test_no_twin_keeps_tcp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
