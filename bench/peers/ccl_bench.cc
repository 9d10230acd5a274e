/* ccl_bench.cc - Intel oneCCL's all_reduce (ccl::allreduce, float32 sum) in
 * mpi_bench.c's columns, so that its rows pair with the MPI peers' and
 * distcomm-perf's. Started by distcomm-launch (rank and size from RANK and
 * WORLD_SIZE, as torchrun sets them): rank 0 makes oneCCL's main key-value
 * store and writes its address to the file CCL_BENCH_KVS; the others wait
 * for that file (bounded: 60 s), so no MPI is needed to start it. oneCCL's
 * transport is its ATL's: CCL_ATL_TRANSPORT=ofi (libfabric; FI_PROVIDER=tcp
 * or shm) or mpi. Build and run: bench/peers/ccl.sh.
 * Usage: ccl_bench [runs=7] [max bytes] [most iters]
 *   time per op = max over ranks of (loop time / iters), median of runs. */
#include <oneapi/ccl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "schedule.h"

/* The wheel's CPU libccl.a was built by Intel's compiler: it calls that
 * compiler's memcpy/memset and leaves ITT's (Intel's tracing API's) function
 * pointers to the program; ITT calls through a pointer only when it is set. */
extern "C" {
void *_intel_fast_memcpy(void *d, const void *s, size_t n) {
  return memcpy(d, s, n);
}
void *_intel_fast_memset(void *d, int c, size_t n) { return memset(d, c, n); }
void *__itt_domain_create_ptr__3_0, *__itt_event_create_ptr__3_0,
    *__itt_event_end_ptr__3_0, *__itt_event_start_ptr__3_0,
    *__itt_metadata_add_ptr__3_0, *__itt_string_handle_create_ptr__3_0,
    *__itt_task_begin_ptr__3_0, *__itt_task_end_ptr__3_0,
    *__itt_thread_set_name_ptr__3_0;
}

static int env_int(const char *name) {
  const char *v = getenv(name);
  if (!v) {
    fprintf(stderr,
            "ccl_bench: %s is not set (start it under distcomm-launch)\n",
            name);
    exit(2);
  }
  return atoi(v);
}

/* The main store's address: made by rank 0, read from the file by the rest. */
static ccl::shared_ptr_class<ccl::kvs> make_kvs(int rank, const char *path) {
  ccl::kvs::address_type addr;
  if (rank == 0) {
    auto kvs = ccl::create_main_kvs();
    addr = kvs->get_address();
    std::string tmp = std::string(path) + ".tmp";
    std::ofstream(tmp, std::ios::binary)
        .write(addr.data(), (std::streamsize)addr.size());
    std::rename(tmp.c_str(), path); /* whole or absent for the readers */
    return kvs;
  }
  for (int i = 0; i < 6000; i++) { /* 60 s */
    std::ifstream f(path, std::ios::binary);
    if (f.read(addr.data(), (std::streamsize)addr.size()))
      return ccl::create_kvs(addr);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fprintf(stderr,
          "ccl_bench: rank %d: rank 0 wrote no store address to %s in 60 s\n",
          rank, path);
  exit(1);
}

int main(int argc, char **argv) {
  int rank = env_int("RANK"), n = env_int("WORLD_SIZE");
  int runs = argc > 1 ? atoi(argv[1]) : 7;
  size_t upto = argc > 2 ? strtoull(argv[2], nullptr, 10) : SIZE_MAX;
  int most = argc > 3 ? atoi(argv[3]) : 1 << 30;
  const char *path = getenv("CCL_BENCH_KVS");
  if (!path) {
    fprintf(stderr, "ccl_bench: CCL_BENCH_KVS (a file path for the store's "
                    "address) is not set\n");
    return 2;
  }
  ccl::init();
  auto kvs = make_kvs(rank, path);
  auto comm = ccl::create_communicator(n, rank, kvs);
  size_t maxs = sizes[NS - 1];
  std::vector<float> sb(maxs / 4, (float)(rank + 1)), rb(maxs / 4, 0.f);
  std::vector<double> t(runs);
  if (rank == 0) {
    const char *atl = getenv("CCL_ATL_TRANSPORT"),
               *prov = getenv("FI_PROVIDER");
    printf("# oneCCL %s, ATL %s, FI_PROVIDER %s\n# nranks=%d runs=%d (median "
           "reported)\n",
           ccl::get_library_version().full, atl ? atl : "default",
           prov ? prov : "default", n, runs);
    printf("%-15s %12s %6s %12s %10s %10s %s\n", "op", "bytes", "iters",
           "time_us", "algbw_GB/s", "busbw_GB/s", "check");
  }
  for (size_t S : sizes) {
    if (S > upto)
      break;
    int it = std::min(iters_for(S), most);
    size_t cnt = S / 4;
    for (int r = -1; r < runs; r++) {
      ccl::barrier(comm);
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < it; i++)
        ccl::allreduce(sb.data(), rb.data(), cnt, ccl::reduction::sum, comm)
            .wait();
      double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count() /
          it;
      double mx = 0;
      ccl::allreduce(&dt, &mx, 1, ccl::reduction::max, comm).wait();
      if (r >= 0)
        t[r] = mx;
    }
    float expect = n * (n + 1) / 2.0f;
    int ok = rb[0] == expect && rb[cnt - 1] == expect, allok = 0;
    ccl::allreduce(&ok, &allok, 1, ccl::reduction::min, comm).wait();
    if (rank == 0) {
      std::sort(t.begin(), t.end());
      double tm = t[runs / 2], alg = S / tm / 1e9;
      printf("%-15s %12zu %6d %12.2f %10.3f %10.3f %s\n", "allreduce", S, it,
             tm * 1e6, alg, alg * 2.0 * (n - 1) / n, allok ? "ok" : "WRONG");
      fflush(stdout);
    }
  }
  if (rank == 0)
    std::remove(path);
  return 0;
}
