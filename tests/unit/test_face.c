/* The MPI face (src/faces/openmpi) in one process: the version text MLX
 * checks, the recognition of float16/bfloat16 user ops (probed, then run on
 * distcomm's kernels) and the fallback for others, a world of one, and the
 * fatal error paths: each prints the call and distcomm's detail and ends
 * the process with status 1 (run in a child). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "faces/openmpi/face.h"

int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm);
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
             int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status);
int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *type);
int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op);
extern char ompi_mpi_comm_world[], ompi_mpi_op_sum[], ompi_mpi_float[],
    ompi_mpi_uint8_t[], ompi_mpi_c_complex[];

/* ---- user ops as MLX writes them, with arithmetic of their own --------- */

static float bf_to_f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t f_to_bf(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

#define USER_OPS(T, name, load, store)                                         \
  static void name##_sum(void *in, void *acc, int *n, MPI_Datatype *t) {       \
    (void)t;                                                                   \
    T *a = acc, *b = in;                                                       \
    for (int i = 0; i < *n; i++)                                               \
      a[i] = store(load(a[i]) + load(b[i]));                                   \
  }                                                                            \
  static void name##_max(void *in, void *acc, int *n, MPI_Datatype *t) {       \
    (void)t;                                                                   \
    T *a = acc, *b = in;                                                       \
    for (int i = 0; i < *n; i++)                                               \
      a[i] = load(a[i]) < load(b[i]) ? b[i] : a[i];                            \
  }                                                                            \
  static void name##_min(void *in, void *acc, int *n, MPI_Datatype *t) {       \
    (void)t;                                                                   \
    T *a = acc, *b = in;                                                       \
    for (int i = 0; i < *n; i++)                                               \
      a[i] = load(b[i]) < load(a[i]) ? b[i] : a[i];                            \
  }
#define ID(x) (x)
USER_OPS(_Float16, f16, ID, ID)
USER_OPS(uint16_t, bf16, bf_to_f, f_to_bf)

/* complex64 max as MLX orders complex numbers: by real, then imaginary. */
static void c64_max(void *in, void *acc, int *n, MPI_Datatype *t) {
  (void)t;
  float *a = acc, *b = in;
  for (int i = 0; i < *n; i++, a += 2, b += 2)
    if (a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]))
      a[0] = b[0], a[1] = b[1];
}

static void f16_prod(void *in, void *acc, int *n, MPI_Datatype *t) {
  (void)t;
  _Float16 *a = acc, *b = in;
  for (int i = 0; i < *n; i++)
    a[i] *= b[i];
}

static void test_version_says_open_mpi_and_distcomm(void **state) {
  (void)state;
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = -1;
  assert_int_equal(MPI_Get_library_version(v, &n), MPI_SUCCESS);
  assert_int_equal(n, (int)strlen(v));
  assert_non_null(strstr(v, "Open MPI"));
  assert_non_null(strstr(v, "distcomm " DISTCOMM_VERSION_STRING));
  assert_non_null(strstr(v, "not Open MPI"));
}

static void test_user_ops_are_recognised(void **state) {
  (void)state;
  struct {
    MPI_User_function *fn;
    int dtype, op;
  } want[] = {
      {f16_sum, DC_FLOAT16, DC_SUM},   {f16_max, DC_FLOAT16, DC_MAX},
      {f16_min, DC_FLOAT16, DC_MIN},   {bf16_sum, DC_BFLOAT16, DC_SUM},
      {bf16_max, DC_BFLOAT16, DC_MAX}, {bf16_min, DC_BFLOAT16, DC_MIN},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int dtype = -2, op = -2;
    assert_int_equal(dc_face_recognise(want[i].fn, &dtype, &op), 0);
    assert_int_equal(dtype, want[i].dtype);
    assert_int_equal(op, want[i].op);
  }
  int dtype, op;
  assert_int_equal(dc_face_recognise(c64_max, &dtype, &op), -1);
  assert_int_equal(dc_face_recognise(f16_prod, &dtype, &op), -1);
}

/* A world of one (nothing configured): each call works as an identity. */
static void test_world_of_one(void **state) {
  (void)state;
  MPI_Comm world = ompi_mpi_comm_world;
  int rank = -1, size = -1;
  assert_int_equal(MPI_Init(NULL, NULL), MPI_SUCCESS);
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  assert_int_equal(rank, 0);
  assert_int_equal(size, 1);

  float f[3] = {1, 2, 3}, g[3] = {0};
  MPI_Allreduce(f, g, 3, ompi_mpi_float, ompi_mpi_op_sum, world);
  assert_memory_equal(f, g, sizeof f);
  MPI_Allreduce(MPI_IN_PLACE, f, 3, ompi_mpi_float, ompi_mpi_op_sum, world);
  assert_true(f[2] == 3);

  MPI_Datatype half;
  MPI_Op sum, cmax;
  MPI_Type_contiguous(2, ompi_mpi_uint8_t, &half);
  MPI_Type_commit(&half);
  MPI_Op_create(f16_sum, 1, &sum);
  MPI_Op_create(c64_max, 1, &cmax);
  _Float16 h[2] = {1.5f16, -2}, hout[2];
  MPI_Allreduce(h, hout, 2, half, sum, world);
  assert_memory_equal(h, hout, sizeof h);
  float c[4] = {1, 2, 3, 4}, cout[4]; /* the fallback: gather, apply */
  MPI_Allreduce(c, cout, 2, ompi_mpi_c_complex, cmax, world);
  assert_memory_equal(c, cout, sizeof c);

  int r = 7, all = -1;
  MPI_Allgather(&r, 4, ompi_mpi_uint8_t, &all, 4, ompi_mpi_uint8_t, world);
  assert_int_equal(all, 7);
  MPI_Comm sub = NULL;
  MPI_Comm_split(world, 3, 0, &sub);
  MPI_Comm_size(sub, &size);
  assert_int_equal(size, 1);
  MPI_Comm_free(&sub);
  assert_null(sub);
  MPI_Comm_split(world, MPI_UNDEFINED, 0, &sub);
  assert_null(sub); /* MPI_COMM_NULL */
  free(half);
  free(sum);
  free(cmax);
  assert_int_equal(MPI_Finalize(), MPI_SUCCESS);
}

/* Runs fn in a child; returns its exit status, its stderr in err. */
static int in_child(void (*fn)(void), char *err, size_t n) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(p[1], 2);
    alarm(20); /* nothing here may hang */
    fn();
    _exit(0);
  }
  close(p[1]);
  size_t got = 0;
  ssize_t k;
  while (got + 1 < n && (k = read(p[0], err + got, n - 1 - got)) > 0)
    got += (size_t)k;
  err[got] = '\0';
  close(p[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void recv_any_source(void) {
  char b[4];
  MPI_Init(NULL, NULL);
  MPI_Recv(b, 4, ompi_mpi_uint8_t, MPI_ANY_SOURCE, 0, ompi_mpi_comm_world,
           NULL);
}

static void send_past_the_world(void) {
  char b[4] = {0};
  MPI_Init(NULL, NULL);
  MPI_Send(b, 4, ompi_mpi_uint8_t, 5, 0, ompi_mpi_comm_world);
}

static void init_rank_out_of_range(void) {
  char path[] = "/tmp/dc-face-hosts-XXXXXX";
  int fd = mkstemp(path);
  const char one[] = "[[\"127.0.0.1:1\"]]";
  if (fd < 0 || write(fd, one, sizeof one - 1) < 0)
    _exit(3);
  close(fd);
  setenv("DISTCOMM_RANK", "5", 1);
  setenv("DISTCOMM_HOSTFILE", path, 1);
  MPI_Init(NULL, NULL);
  unlink(path);
}

static void non_commutative_op(void) {
  MPI_Op op;
  MPI_Op_create(f16_sum, 0, &op);
}

static void sum_of_raw_bytes(void) {
  MPI_Datatype two;
  char b[4] = {0};
  MPI_Init(NULL, NULL);
  MPI_Type_contiguous(2, ompi_mpi_uint8_t, &two);
  MPI_Allreduce(MPI_IN_PLACE, b, 2, two, ompi_mpi_op_sum, ompi_mpi_comm_world);
}

static void test_errors_are_fatal_and_say_why(void **state) {
  (void)state;
  char err[2048];
  assert_int_equal(in_child(recv_any_source, err, sizeof err), 1);
  assert_non_null(strstr(err, "MPI_Recv failed: ERR_INVALID"));
  assert_non_null(strstr(err, "MPI_ANY_SOURCE"));
  assert_int_equal(in_child(send_past_the_world, err, sizeof err), 1);
  assert_non_null(strstr(err, "[distcomm-ompi rank 0] MPI_Send failed"));
  assert_non_null(strstr(err, "5"));
  assert_int_equal(in_child(init_rank_out_of_range, err, sizeof err), 1);
  assert_non_null(strstr(err, "[distcomm-ompi] MPI_Init failed: ERR_CONFIG"));
  assert_non_null(strstr(err, "DISTCOMM_RANK=5 is out of range"));
  assert_non_null(strstr(err, "DISTCOMM_HOSTFILE"));
  assert_int_equal(in_child(non_commutative_op, err, sizeof err), 1);
  assert_non_null(strstr(err, "MPI_Op_create failed: ERR_NOT_SUPPORTED"));
  assert_int_equal(in_child(sum_of_raw_bytes, err, sizeof err), 1);
  assert_non_null(strstr(err, "MPI_Allreduce failed: ERR_INVALID"));
  assert_non_null(strstr(err, "predefined op on a derived datatype"));
}

int main(void) {
  /* The test sets these itself; a launcher's would change the world. */
  const char *vars[] = {"MLX_RANK",
                        "MLX_HOSTFILE",
                        "DISTCOMM_RANK",
                        "DISTCOMM_HOSTFILE",
                        "MLX_IBV_DEVICES",
                        "DISTCOMM_COORDINATOR",
                        "MLX_JACCL_COORDINATOR",
                        "MASTER_ADDR"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_says_open_mpi_and_distcomm),
      cmocka_unit_test(test_user_ops_are_recognised),
      cmocka_unit_test(test_world_of_one),
      cmocka_unit_test(test_errors_are_fatal_and_say_why),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
